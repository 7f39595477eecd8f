"""Fixtures shared by every app's tests: the injected clock and the cast."""

from __future__ import annotations

import importlib

import pytest

from cindy_site.clock import FakeClock, set_clock

pytest_plugins = ["cindy_site.testing.fixtures", "cindy_site.testing.staff"]


@pytest.fixture
def clock():
    """A FakeClock installed as the process clock; move it with `clock.advance(seconds)`."""
    fake = FakeClock()
    previous = set_clock(fake)
    yield fake
    set_clock(previous)


@pytest.fixture(autouse=True)
def _seeded_model_prices(request):
    """The default model prices the migrations seed, present for every database test.

    A transactional test empties every table when it ends, migration data included; which tests run
    after one depends on how the run is split across processes, so each database test puts the seeded
    prices back (the migration's own function: it never overwrites an edited price)."""
    names = set(request.fixturenames)
    if "transactional_db" in names:
        request.getfixturevalue("transactional_db")
    elif "db" in names:
        request.getfixturevalue("db")
    elif not request.node.get_closest_marker("django_db"):
        return
    from django.apps import apps

    from conversations.models import ModelPrice

    if not ModelPrice.objects.exists():
        seed = importlib.import_module("conversations.migrations.0002_seed_model_prices")
        seed.seed_prices(apps, None)
        # The audio, image and speech models' prices, seeded by later migrations.
        audio = importlib.import_module("conversations.migrations.0013_audio_usage_and_prices")
        audio.seed_audio_prices(apps, None)
        images = importlib.import_module("conversations.migrations.0014_image_generation")
        images.seed_image_prices(apps, None)
        speech = importlib.import_module("conversations.migrations.0018_voice_notes")
        speech.seed_speech_prices(apps, None)
        caches = importlib.import_module("conversations.migrations.0023_explicit_cache")
        caches.seed_storage_prices(apps, None)


@pytest.fixture(autouse=True)
def _environment_parameters():
    """Every test starts and ends with the environment's global parameters (cindy_site/parameters.py):
    an override a test stored is forgotten with its database rows."""
    from cindy_site.parameters import parameters_forget

    parameters_forget()
    yield
    parameters_forget()
