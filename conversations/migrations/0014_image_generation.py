"""Pictures: the `image` node kind, the `image` LLM call purpose, image output tokens on each call and
an image output price per model, with the price of Gemini's image model (late 2025: input 0.30, text
output 2.50, image output 30.00 USD per million tokens; a 1024 px picture is 1290 tokens, about
0.039 USD). Re-running never overwrites a price an operator has changed."""

from decimal import Decimal

from django.db import migrations, models

#: provider, model prefix, input, cached input, output, image output (USD per million tokens)
IMAGE_PRICES = [("gemini", "gemini-2.5-flash-image", "0.30", "0.03", "2.50", "30.00")]


def seed_image_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for provider, prefix, price_in, cached, price_out, image_out in IMAGE_PRICES:
        ModelPrice.objects.get_or_create(
            provider=provider,
            model_prefix=prefix,
            defaults={
                "input_per_million": Decimal(price_in),
                "cached_input_per_million": Decimal(cached),
                "output_per_million": Decimal(price_out),
                "image_output_per_million": Decimal(image_out),
            },
        )


def unseed_image_prices(apps, schema_editor):
    ModelPrice = apps.get_model("conversations", "ModelPrice")
    for provider, prefix, *_ in IMAGE_PRICES:
        ModelPrice.objects.filter(provider=provider, model_prefix=prefix).delete()


class Migration(migrations.Migration):
    dependencies = [("conversations", "0013_audio_usage_and_prices")]

    operations = [
        migrations.AddField(
            model_name="llmcall",
            name="image_output_tokens",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="modelprice",
            name="image_output_per_million",
            field=models.DecimalField(
                decimal_places=4,
                default=Decimal("0"),
                help_text="Image output tokens (a picture a model makes); 0: billed at the output price",
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
                ],
                default="plan",
                max_length=32,
            ),
        ),
        migrations.AlterField(
            model_name="tasknode",
            name="kind",
            field=models.CharField(
                choices=[
                    ("received", "Received"),
                    ("send", "Send"),
                    ("sticker", "Sticker"),
                    ("react", "React"),
                    ("wait", "Wait"),
                    ("block", "Block"),
                    ("unblock", "Unblock"),
                    ("clear-conversation", "Clear conversation"),
                    ("shutdown", "Shutdown"),
                    ("xsend", "Cross-chat send"),
                    ("send_media", "Send media"),
                    ("image", "Picture"),
                ],
                max_length=32,
            ),
        ),
        migrations.RunPython(seed_image_prices, unseed_image_prices),
    ]
