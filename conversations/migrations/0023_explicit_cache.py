"""Gemini explicit context caches: the shared cache rows, whether a call used one, the `cache` purpose
(the cost of making and keeping one), and a storage price per model, seeded with Google's published
rates (late 2025, USD per million tokens per hour: 4.50 for the Pro models, 1.00 for the others).
Re-running never overwrites a storage price an operator has set."""

from decimal import Decimal

import django.db.models.deletion
from django.db import migrations, models

#: model prefix -> USD per million tokens per hour of explicit cache storage
STORAGE_PRICES = {
    "gemini-3-flash": "1.00",
    "gemini-3-pro": "4.50",
    "gemini-2.5-flash": "1.00",
    "gemini-2.5-flash-lite": "1.00",
    "gemini-2.5-pro": "4.50",
    "gemini-2.0-flash": "1.00",
    "gemini-2.0-flash-lite": "1.00",
}


def seed_storage_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for prefix, price in STORAGE_PRICES.items():
        ModelPrice.objects.filter(
            provider="gemini", model_prefix=prefix, cache_storage_per_million_hour=0
        ).update(cache_storage_per_million_hour=Decimal(price))


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0012_agent_grants_and_access_requests"),
        ("conversations", "0022_conversation_history_window_start"),
    ]

    operations = [
        migrations.CreateModel(
            name="ExplicitCache",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(default="gemini", max_length=32)),
                ("model", models.CharField(max_length=100)),
                ("prefix_hash", models.CharField(max_length=64)),
                ("prefix_turns", models.PositiveIntegerField()),
                ("name", models.CharField(max_length=200)),
                ("tokens", models.PositiveIntegerField(default=0)),
                ("created", models.DateTimeField()),
                ("expires_at", models.DateTimeField()),
            ],
            options={
                "ordering": ["-created", "-id"],
            },
        ),
        migrations.AddField(
            model_name="llmcall",
            name="explicit_cache",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="modelprice",
            name="cache_storage_per_million_hour",
            field=models.DecimalField(
                decimal_places=4,
                default=Decimal("0"),
                help_text="USD per million tokens per hour an explicit context cache is kept (Gemini)",
                max_digits=10,
            ),
        ),
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
                    ("cache", "Keep an explicit cache"),
                ],
                default="plan",
                max_length=32,
            ),
        ),
        migrations.AddIndex(
            model_name="llmcall",
            index=models.Index(fields=["conversation", "created"], name="llmcall_conversation_idx"),
        ),
        migrations.AddField(
            model_name="explicitcache",
            name="conversation",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="explicit_caches",
                to="conversations.conversation",
            ),
        ),
        migrations.AddIndex(
            model_name="explicitcache",
            index=models.Index(fields=["conversation", "model"], name="explicitcache_conversation_idx"),
        ),
        migrations.AddConstraint(
            model_name="explicitcache",
            constraint=models.UniqueConstraint(
                fields=("model", "prefix_hash"), name="explicitcache_prefix_unique"
            ),
        ),
        migrations.RunPython(seed_storage_prices, migrations.RunPython.noop),
    ]
