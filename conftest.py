"""Fixtures shared by every app's tests: the injected clock and the cast."""

from __future__ import annotations

import pytest

from cindy_site.clock import FakeClock, set_clock

pytest_plugins = ["cindy_site.testing.fixtures", "cindy_site.testing.staff"]


def pytest_configure(config: pytest.Config) -> None:
    """Passwords are hashed at one PBKDF2 iteration in the test process (cindy_site/testing/hashers.py):
    the default's million cost about 0.6 s of CPU per hash or check, on every test with staff."""
    from django.conf import settings
    from django.contrib.auth import hashers

    settings.PASSWORD_HASHERS = [
        "cindy_site.testing.hashers.FastPBKDF2PasswordHasher",
        *settings.PASSWORD_HASHERS,
    ]
    hashers.get_hashers.cache_clear()
    hashers.get_hashers_by_algorithm.cache_clear()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a run against a database server (`./test.sh --mariadb`), the tests marked `any_database` are
    skipped with their reason: they touch no test database, or start Cindy on its own embedded SQLite
    whatever the suite uses, so the SQLite run has already run them as they are. On the SQLite run,
    the tests marked `mariadb_run` are, the other way round: their processes use MariaDB either way."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        on_mariadb = pytest.mark.skip(
            reason="starts its processes on MariaDB whatever database the suite uses: the MariaDB run "
            "(./test.sh --mariadb) covers it"
        )
        for item in items:
            if item.get_closest_marker("mariadb_run") is not None:
                item.add_marker(on_mariadb)
        return
    skip = pytest.mark.skip(
        reason="does the same on any database (no test database, or Cindy on its embedded SQLite): the SQLite run covers it"
    )
    for item in items:
        if item.get_closest_marker("any_database") is not None:
            item.add_marker(skip)


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
    prices back with `llm.prices.seed_default_prices`, the function migration llm 0004 calls."""
    names = set(request.fixturenames)
    if "transactional_db" in names:
        request.getfixturevalue("transactional_db")
    elif "db" in names:
        request.getfixturevalue("db")
    elif not request.node.get_closest_marker("django_db"):
        return
    from llm.models import ModelPrice
    from llm.prices import seed_default_prices

    if not ModelPrice.objects.exists():
        seed_default_prices(ModelPrice)


@pytest.fixture(autouse=True)
def _environment_parameters():
    """Every test starts and ends with the environment's global parameters (cindy_site/parameters.py)
    and LLM endpoints (cindy_site/llm_endpoints.py): what a test stored is forgotten with its rows."""
    from cindy_site.llm_endpoints import stored_endpoints_forget
    from cindy_site.parameters import parameters_forget

    parameters_forget()
    stored_endpoints_forget()
    yield
    parameters_forget()
    stored_endpoints_forget()
