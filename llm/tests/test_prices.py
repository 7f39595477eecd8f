"""The default price table is what the price-seeding migrations add up to, and seeding never
overwrites a price an operator changed."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest

from llm.models import ModelPrice
from llm.prices import DEFAULT_PRICES, seed_default_prices

pytestmark = pytest.mark.django_db

#: The migrations that seeded prices, with their seeding function, in the order they ran.
SEEDING = [
    ("conversations.migrations.0002_seed_model_prices", "seed_prices"),
    ("conversations.migrations.0013_audio_usage_and_prices", "seed_audio_prices"),
    ("conversations.migrations.0014_image_generation", "seed_image_prices"),
    ("conversations.migrations.0018_voice_notes", "seed_speech_prices"),
    ("conversations.migrations.0023_explicit_cache", "seed_storage_prices"),
    ("llm.migrations.0003_anthropic_prompt_cache", "seed_anthropic_prices"),
    ("llm.migrations.0007_embedding_purpose", "seed_embedding_prices"),
]


class _PriceModelApps:
    """What the migrations' functions ask `apps` for: the price model, under its old app or this one."""

    def get_model(self, app_label: str, name: str):
        assert (app_label, name) in (("conversations", "ModelPrice"), ("llm", "ModelPrice"))
        return ModelPrice


def _table() -> dict[tuple[str, str], tuple]:
    return {
        (p.provider, p.model_prefix): (
            p.input_per_million,
            p.cached_input_per_million,
            p.output_per_million,
            p.audio_input_per_million,
            p.audio_per_minute,
            p.image_output_per_million,
            p.cache_storage_per_million_hour,
            p.cache_write_per_million,
        )
        for p in ModelPrice.objects.all()
    }


def test_seeding_gives_the_table_the_migrations_seeded_one_after_the_other():
    ModelPrice.objects.all().delete()
    for name, function in SEEDING:
        getattr(importlib.import_module(name), function)(_PriceModelApps(), None)
    migrated = _table()
    ModelPrice.objects.all().delete()

    assert seed_default_prices(ModelPrice) == len(DEFAULT_PRICES)

    assert _table() == migrated


def test_a_migration_s_copy_of_the_price_model_without_later_fields_seeds_the_table():
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    state = MigrationLoader(connection).project_state(("llm", "0002_routebreaker"))
    historical = state.apps.get_model("llm", "ModelPrice")
    assert "cache_write_per_million" not in {f.name for f in historical._meta.get_fields()}
    ModelPrice.objects.all().delete()

    assert seed_default_prices(historical) == len(DEFAULT_PRICES)

    assert ModelPrice.objects.get(provider="openai", model_prefix="gpt-5").output_per_million == Decimal("10")
    assert (
        ModelPrice.objects.get(provider="anthropic", model_prefix="claude-haiku-4").cache_write_per_million
        is None
    )


def test_seeding_again_adds_only_missing_prices_and_keeps_an_edited_one():
    ModelPrice.objects.all().delete()
    seed_default_prices(ModelPrice)
    ModelPrice.objects.filter(provider="openai", model_prefix="gpt-5").update(input_per_million=Decimal("9"))
    ModelPrice.objects.filter(provider="grok", model_prefix="grok-3").delete()

    assert seed_default_prices(ModelPrice) == 1

    assert ModelPrice.objects.get(provider="openai", model_prefix="gpt-5").input_per_million == Decimal("9")
    assert ModelPrice.objects.filter(provider="grok", model_prefix="grok-3").exists()
