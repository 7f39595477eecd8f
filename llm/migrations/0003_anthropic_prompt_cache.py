"""Claude through Anthropic's Messages API: the input tokens a call wrote to the prompt cache, a cache
write price per model, and Anthropic's published prices (late 2025, USD per million tokens: cache
reads at 0.1x the input price, 5-minute cache writes at 1.25x). Re-running never overwrites a price
an operator has set."""

from decimal import Decimal

from django.db import migrations, models

#: model prefix -> (input, cached input, output, cache write), as llm/prices.py had them then.
ANTHROPIC_PRICES = {
    "claude-opus-4": ("5.00", "0.50", "25.00", "6.25"),
    "claude-opus-4-0": ("15.00", "1.50", "75.00", "18.75"),
    "claude-opus-4-1": ("15.00", "1.50", "75.00", "18.75"),
    "claude-opus-4-2025": ("15.00", "1.50", "75.00", "18.75"),
    "claude-sonnet-4": ("3.00", "0.30", "15.00", "3.75"),
    "claude-haiku-4": ("1.00", "0.10", "5.00", "1.25"),
}


def seed_anthropic_prices(apps, schema_editor):
    ModelPrice = apps.get_model("llm", "ModelPrice")
    for prefix, (input_price, cached, output, write) in ANTHROPIC_PRICES.items():
        ModelPrice.objects.get_or_create(
            provider="anthropic",
            model_prefix=prefix,
            defaults={
                "input_per_million": Decimal(input_price),
                "cached_input_per_million": Decimal(cached),
                "output_per_million": Decimal(output),
                "cache_write_per_million": Decimal(write),
            },
        )


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0002_routebreaker"),
    ]

    operations = [
        migrations.AddField(
            model_name="llmcall",
            name="cache_write_tokens",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="llmusagedaily",
            name="cache_write_tokens",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="modelprice",
            name="cache_write_per_million",
            field=models.DecimalField(
                blank=True,
                decimal_places=4,
                help_text="Input tokens written to a prompt cache, where the provider bills them apart "
                "(Anthropic); empty: the input price",
                max_digits=10,
                null=True,
            ),
        ),
        migrations.RunPython(seed_anthropic_prices, migrations.RunPython.noop),
    ]
