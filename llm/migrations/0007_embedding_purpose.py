"""Embedding calls (recall's provider vectors, docs/recall.md) are LLM calls of their own purpose, and
the embedding models have default prices (llm/prices.py), added to every database's table."""

from decimal import Decimal

from django.db import migrations, models

#: (provider, model prefix) -> USD per million input tokens, as llm/prices.py had them then.
EMBEDDING_PRICES = {
    ("gemini", "gemini-embedding"): "0.15",
    ("openai", "text-embedding-3-small"): "0.02",
    ("openai", "text-embedding-3-large"): "0.13",
}


def seed_embedding_prices(apps, schema_editor):
    ModelPrice = apps.get_model("llm", "ModelPrice")
    for (provider, prefix), price in EMBEDDING_PRICES.items():
        ModelPrice.objects.get_or_create(
            provider=provider,
            model_prefix=prefix,
            defaults={
                "input_per_million": Decimal(price),
                "cached_input_per_million": Decimal(price),
                "output_per_million": Decimal("0"),
            },
        )


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0006_llm_endpoint_structured"),
    ]

    operations = [
        migrations.AlterField(
            model_name="llmcall",
            name="purpose",
            field=models.CharField(
                choices=[
                    ("plan", "Plan a turn"),
                    ("describe", "Describe media"),
                    ("summarize", "Summarize"),
                    ("translate", "Translate for an operator"),
                    ("transcribe", "Transcribe a voice note"),
                    ("image", "Make a picture"),
                    ("speech", "Speak a voice note"),
                    ("embed", "Embed for recall"),
                    ("cache", "Keep an explicit cache"),
                ],
                default="plan",
                max_length=32,
            ),
        ),
        migrations.RunPython(seed_embedding_prices, migrations.RunPython.noop),
    ]
