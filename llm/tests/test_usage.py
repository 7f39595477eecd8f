from __future__ import annotations

from decimal import Decimal

from llm.models import ModelPrice
from llm.request import Usage
from llm.usage import estimate_cost, price_for


def test_default_prices_are_seeded(db):
    assert ModelPrice.objects.filter(provider="gemini", model_prefix="gemini-3-flash").exists()
    assert ModelPrice.objects.filter(provider="grok", model_prefix="grok-4-fast").exists()


def test_longest_prefix_wins(db):
    assert price_for("gemini", "gemini-2.5-flash-lite-preview").model_prefix == "gemini-2.5-flash-lite"
    assert price_for("gemini", "gemini-2.5-flash").model_prefix == "gemini-2.5-flash"
    assert price_for("grok", "grok-4-fast-non-reasoning").model_prefix == "grok-4-fast"
    assert price_for("gemini", "unknown-model") is None


def test_cost_bills_cached_input_at_the_cached_rate_and_thinking_as_output(db):
    ModelPrice.objects.create(
        provider="openai",
        model_prefix="test-model",
        input_per_million=Decimal("2"),
        cached_input_per_million=Decimal("0.5"),
        output_per_million=Decimal("8"),
    )
    usage = Usage(
        input_tokens=1_000_000, cached_tokens=400_000, output_tokens=100_000, thinking_tokens=50_000
    )

    # 600k * 2 + 400k * 0.5 + 150k * 8, per million
    assert estimate_cost("openai", "test-model-2", usage) == Decimal("2.600000")


def test_unknown_model_costs_nothing(db):
    assert estimate_cost("openrouter", "nobody/knows", Usage(input_tokens=10)) == Decimal("0")


def test_audio_input_is_billed_at_the_audio_rate_or_else_the_input_rate(db):
    ModelPrice.objects.create(
        provider="gemini",
        model_prefix="test-audio",
        input_per_million=Decimal("0.5"),
        output_per_million=Decimal("3"),
        audio_input_per_million=Decimal("1"),
    )
    ModelPrice.objects.create(
        provider="gemini",
        model_prefix="test-flat",
        input_per_million=Decimal("0.5"),
        output_per_million=Decimal("3"),
    )
    usage = Usage(input_tokens=1_000_000, audio_tokens=600_000, output_tokens=100_000)

    # 400k text * 0.5 + 600k audio * 1 + 100k * 3, per million
    assert estimate_cost("gemini", "test-audio", usage) == Decimal("1.100000")
    # no audio price: audio tokens are input tokens at the input price
    assert estimate_cost("gemini", "test-flat", usage) == Decimal("0.800000")


def test_audio_billed_by_duration_costs_its_minutes(db):
    assert price_for("openai", "whisper-1").audio_per_minute == Decimal("0.006")
    assert estimate_cost("openai", "whisper-1", Usage(audio_seconds=90)) == Decimal("0.009000")
    assert price_for("gemini", "gemini-2.5-flash").audio_input_per_million == Decimal("1")
    assert price_for("openai", "gpt-4o-mini-transcribe").model_prefix == "gpt-4o-mini-transcribe"
