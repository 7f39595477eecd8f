"""Default prices (USD per million tokens) from the providers' public price pages, late 2025.

They are estimates for the usage dashboard; operators edit them in the admin. The longest matching
model prefix wins, so a specific model can be priced beside its family. Re-running never overwrites
a price an operator has changed.
"""

from decimal import Decimal

from django.db import migrations

PRICES = [
    # provider, model prefix, input, cached input, output
    ("gemini", "gemini-3-flash", "0.50", "0.05", "3.00"),
    ("gemini", "gemini-3-pro", "2.00", "0.20", "12.00"),
    ("gemini", "gemini-2.5-flash", "0.30", "0.03", "2.50"),
    ("gemini", "gemini-2.5-flash-lite", "0.10", "0.01", "0.40"),
    ("gemini", "gemini-2.5-pro", "1.25", "0.125", "10.00"),
    ("gemini", "gemini-2.0-flash", "0.10", "0.025", "0.40"),
    ("gemini", "gemini-2.0-flash-lite", "0.075", "0.01875", "0.30"),
    ("grok", "grok-4-fast", "0.20", "0.05", "0.50"),
    ("grok", "grok-4-1-fast", "0.20", "0.05", "0.50"),
    ("grok", "grok-4", "3.00", "0.75", "15.00"),
    ("grok", "grok-3-mini", "0.30", "0.075", "0.50"),
    ("grok", "grok-3", "3.00", "0.75", "15.00"),
    ("openai", "gpt-4o-mini", "0.15", "0.075", "0.60"),
    ("openai", "gpt-4o", "2.50", "1.25", "10.00"),
    ("openai", "gpt-4.1-mini", "0.40", "0.10", "1.60"),
    ("openai", "gpt-4.1-nano", "0.10", "0.025", "0.40"),
    ("openai", "gpt-4.1", "2.00", "0.50", "8.00"),
    ("openai", "gpt-5-mini", "0.25", "0.025", "2.00"),
    ("openai", "gpt-5-nano", "0.05", "0.005", "0.40"),
    ("openai", "gpt-5", "1.25", "0.125", "10.00"),
]


def seed_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for provider, prefix, price_in, cached, price_out in PRICES:
        ModelPrice.objects.get_or_create(
            provider=provider,
            model_prefix=prefix,
            defaults={
                "input_per_million": Decimal(price_in),
                "cached_input_per_million": Decimal(cached),
                "output_per_million": Decimal(price_out),
            },
        )


def unseed_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for provider, prefix, *_ in PRICES:
        ModelPrice.objects.filter(provider=provider, model_prefix=prefix).delete()


class Migration(migrations.Migration):
    dependencies = [("conversations", "0001_initial")]

    operations = [migrations.RunPython(seed_prices, unseed_prices)]
