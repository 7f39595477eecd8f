"""Embedding calls (recall's provider vectors, docs/recall.md) are LLM calls of their own purpose, and
the embedding models have default prices (llm/prices.py), added to every database's table."""

from django.db import migrations, models


def seed(apps, schema_editor):
    from llm.prices import seed_default_prices

    seed_default_prices(apps.get_model("llm", "ModelPrice"))


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
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
