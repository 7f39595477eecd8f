"""The price table: the default prices Cindy ships, and the admin's edits of them.

`DEFAULT_PRICES` are the providers' public prices (late 2025), estimates for the usage dashboard that
operators edit in the admin. The longest matching model prefix wins, so a specific model can be priced
beside its family. The migrations that introduced each price seeded it as the table stood then (their
own copies, kept as they ran); this table is what they add up to. `seed_default_prices` adds what a
table lacks: migration llm 0004 calls it on every database, and the tests call it after a
transactional test emptied the table.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, NamedTuple

from django.core.exceptions import ValidationError
from django.db import transaction

from llm.models import ModelPrice
from llm.routing import PROVIDERS, endpoint_names


class DefaultPrice(NamedTuple):
    """USD per million tokens unless named otherwise; `audio_input` and `cache_write` None: the input
    price applies."""

    provider: str
    model_prefix: str
    input: str
    cached_input: str
    output: str
    audio_input: str | None = None
    audio_per_minute: str = "0"
    image_output: str = "0"
    cache_storage_per_hour: str = "0"
    cache_write: str | None = None


# fmt: off
DEFAULT_PRICES: tuple[DefaultPrice, ...] = (
    # Gemini: audio input where it differs from text; explicit cache storage per million tokens per hour.
    DefaultPrice("gemini", "gemini-3-flash", "0.50", "0.05", "3.00", "1.00", cache_storage_per_hour="1.00"),
    DefaultPrice("gemini", "gemini-3-pro", "2.00", "0.20", "12.00", cache_storage_per_hour="4.50"),
    DefaultPrice("gemini", "gemini-2.5-flash", "0.30", "0.03", "2.50", "1.00", cache_storage_per_hour="1.00"),
    DefaultPrice("gemini", "gemini-2.5-flash-lite", "0.10", "0.01", "0.40", "0.30", cache_storage_per_hour="1.00"),
    DefaultPrice("gemini", "gemini-2.5-pro", "1.25", "0.125", "10.00", cache_storage_per_hour="4.50"),
    DefaultPrice("gemini", "gemini-2.0-flash", "0.10", "0.025", "0.40", "0.70", cache_storage_per_hour="1.00"),
    DefaultPrice("gemini", "gemini-2.0-flash-lite", "0.075", "0.01875", "0.30", cache_storage_per_hour="1.00"),
    # A 1024 px picture is 1290 image output tokens (about 0.039 USD).
    DefaultPrice("gemini", "gemini-2.5-flash-image", "0.30", "0.03", "2.50", image_output="30.00"),
    # Speech: text in, audio out (25 tokens a second).
    DefaultPrice("gemini", "gemini-2.5-flash-preview-tts", "0.50", "0.50", "10.00"),
    DefaultPrice("gemini", "gemini-2.5-pro-preview-tts", "1.00", "1.00", "20.00"),
    DefaultPrice("grok", "grok-4-fast", "0.20", "0.05", "0.50"),
    DefaultPrice("grok", "grok-4-1-fast", "0.20", "0.05", "0.50"),
    DefaultPrice("grok", "grok-4", "3.00", "0.75", "15.00"),
    DefaultPrice("grok", "grok-3-mini", "0.30", "0.075", "0.50"),
    DefaultPrice("grok", "grok-3", "3.00", "0.75", "15.00"),
    DefaultPrice("openai", "gpt-4o-mini", "0.15", "0.075", "0.60"),
    DefaultPrice("openai", "gpt-4o", "2.50", "1.25", "10.00"),
    DefaultPrice("openai", "gpt-4.1-mini", "0.40", "0.10", "1.60"),
    DefaultPrice("openai", "gpt-4.1-nano", "0.10", "0.025", "0.40"),
    DefaultPrice("openai", "gpt-4.1", "2.00", "0.50", "8.00"),
    DefaultPrice("openai", "gpt-5-mini", "0.25", "0.025", "2.00"),
    DefaultPrice("openai", "gpt-5-nano", "0.05", "0.005", "0.40"),
    DefaultPrice("openai", "gpt-5", "1.25", "0.125", "10.00"),
    # Transcription: whisper-1 bills by the minute of audio.
    DefaultPrice("openai", "gpt-4o-mini-transcribe", "1.25", "0", "5.00", "3.00"),
    DefaultPrice("openai", "gpt-4o-transcribe", "2.50", "0", "10.00", "6.00"),
    DefaultPrice("openai", "whisper-1", "0", "0", "0", audio_per_minute="0.006"),
    # Embeddings (recall, CINDY_RECALL_EMBEDDINGS): input tokens only.
    DefaultPrice("gemini", "gemini-embedding", "0.15", "0.15", "0"),
    DefaultPrice("openai", "text-embedding-3-small", "0.02", "0.02", "0"),
    DefaultPrice("openai", "text-embedding-3-large", "0.13", "0.13", "0"),
    # ElevenLabs bills characters: USD per million characters of text (the input).
    DefaultPrice("elevenlabs", "eleven_multilingual", "100.00", "100.00", "0"),
    DefaultPrice("elevenlabs", "eleven_v3", "100.00", "100.00", "0"),
    DefaultPrice("elevenlabs", "eleven_flash", "50.00", "50.00", "0"),
    DefaultPrice("elevenlabs", "eleven_turbo", "50.00", "50.00", "0"),
    # Anthropic: cache reads at 0.1x the input price, cache writes (5-minute breakpoints) at 1.25x.
    # Opus 4.5 and later cost a third of Opus 4 and 4.1 (`claude-opus-4-20250514`, `claude-opus-4-0`).
    DefaultPrice("anthropic", "claude-opus-4", "5.00", "0.50", "25.00", cache_write="6.25"),
    DefaultPrice("anthropic", "claude-opus-4-0", "15.00", "1.50", "75.00", cache_write="18.75"),
    DefaultPrice("anthropic", "claude-opus-4-1", "15.00", "1.50", "75.00", cache_write="18.75"),
    DefaultPrice("anthropic", "claude-opus-4-2025", "15.00", "1.50", "75.00", cache_write="18.75"),
    DefaultPrice("anthropic", "claude-sonnet-4", "3.00", "0.30", "15.00", cache_write="3.75"),
    DefaultPrice("anthropic", "claude-haiku-4", "1.00", "0.10", "5.00", cache_write="1.25"),
)
# fmt: on


def seed_default_prices(model: Any = ModelPrice) -> int:
    """Add each default price the table lacks (an existing row, edited or not, is left as it is);
    returns how many were added. `model` is the price model, or a migration's historical copy of it."""
    fields = {field.name for field in model._meta.get_fields()}  # a migration's copy may lack later ones
    added = 0
    for row in DEFAULT_PRICES:
        values = {
            "input_per_million": Decimal(row.input),
            "cached_input_per_million": Decimal(row.cached_input),
            "output_per_million": Decimal(row.output),
            "audio_input_per_million": Decimal(row.audio_input) if row.audio_input else None,
            "audio_per_minute": Decimal(row.audio_per_minute),
            "image_output_per_million": Decimal(row.image_output),
            "cache_storage_per_million_hour": Decimal(row.cache_storage_per_hour),
            "cache_write_per_million": Decimal(row.cache_write) if row.cache_write else None,
        }
        _, created = model.objects.get_or_create(
            provider=row.provider,
            model_prefix=row.model_prefix,
            defaults={name: value for name, value in values.items() if name in fields},
        )
        added += created
    return added


def model_price_validate(*, price: ModelPrice) -> None:
    known = (*PROVIDERS, *endpoint_names())  # a self-hosted endpoint costs 0 unless priced here
    if price.provider not in known:
        raise ValidationError({"provider": f'"{price.provider}" is not one of {", ".join(known)}'})
    for field in (
        "input_per_million",
        "cached_input_per_million",
        "output_per_million",
        "audio_input_per_million",
        "audio_per_minute",
        "image_output_per_million",
        "cache_storage_per_million_hour",
        "cache_write_per_million",
    ):
        if (getattr(price, field) or 0) < 0:
            raise ValidationError({field: "prices cannot be negative"})


@transaction.atomic
def model_price_save(*, price: ModelPrice) -> ModelPrice:
    model_price_validate(price=price)
    price.full_clean()
    price.save()
    return price
