"""Audio usage on LLM calls (audio tokens, billed seconds) and audio prices, seeded from the providers'
public price pages (late 2025). Re-running never overwrites a price an operator has changed."""

from decimal import Decimal

from django.db import migrations, models

#: provider, model prefix: audio input per million tokens (where it differs from text input).
AUDIO_TOKEN_PRICES = [
    ("gemini", "gemini-3-flash", "1.00"),
    ("gemini", "gemini-2.5-flash", "1.00"),
    ("gemini", "gemini-2.5-flash-lite", "0.30"),
    ("gemini", "gemini-2.0-flash", "0.70"),
]
#: Transcription models: provider, prefix, text input, output, audio input per million, per minute.
TRANSCRIPTION_PRICES = [
    ("openai", "gpt-4o-mini-transcribe", "1.25", "5.00", "3.00", "0"),
    ("openai", "gpt-4o-transcribe", "2.50", "10.00", "6.00", "0"),
    ("openai", "whisper-1", "0", "0", None, "0.006"),
]


def seed_audio_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for provider, prefix, audio in AUDIO_TOKEN_PRICES:
        ModelPrice.objects.filter(
            provider=provider, model_prefix=prefix, audio_input_per_million__isnull=True
        ).update(audio_input_per_million=Decimal(audio))
    for provider, prefix, price_in, price_out, audio, per_minute in TRANSCRIPTION_PRICES:
        ModelPrice.objects.get_or_create(
            provider=provider,
            model_prefix=prefix,
            defaults={
                "input_per_million": Decimal(price_in),
                "output_per_million": Decimal(price_out),
                "audio_input_per_million": Decimal(audio) if audio else None,
                "audio_per_minute": Decimal(per_minute),
            },
        )


def unseed_audio_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for provider, prefix, *_ in TRANSCRIPTION_PRICES:
        ModelPrice.objects.filter(provider=provider, model_prefix=prefix).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0012_llmcall_worker"),
    ]

    operations = [
        migrations.AddField(
            model_name="llmcall",
            name="audio_seconds",
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name="llmcall",
            name="audio_tokens",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="modelprice",
            name="audio_input_per_million",
            field=models.DecimalField(
                blank=True,
                decimal_places=4,
                help_text="Audio input tokens, where the provider bills them apart; empty: the input price",
                max_digits=10,
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="modelprice",
            name="audio_per_minute",
            field=models.DecimalField(
                decimal_places=4,
                default=Decimal("0"),
                help_text="USD per minute of audio, for models billed by duration (whisper-1)",
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
                ],
                default="plan",
                max_length=32,
            ),
        ),
        migrations.RunPython(seed_audio_prices, unseed_audio_prices),
    ]
