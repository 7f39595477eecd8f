"""Pytest fixtures shared by the apps: the LLM seam (a FakeLLMServer with every provider pointed at
it), and the databases migrated once per run (per test process) that the tests starting Cindy's
processes copy: `migrated_database` on the database the suite runs on, `migrated_sqlite` a SQLite file."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from cindy_site.testing.fake_llm import FakeLLMServer


@pytest.fixture
def fake_llm(settings) -> Iterator[FakeLLMServer]:
    """A running FakeLLMServer; Gemini, Grok, OpenAI, OpenRouter and Anthropic settings point at it with
    test keys."""
    server = FakeLLMServer().start()
    settings.GEMINI_BASE_URL = server.url
    settings.GROK_BASE_URL = server.url + "/v1"
    settings.OPENAI_BASE_URL = server.url + "/v1"
    settings.OPENROUTER_BASE_URL = server.url + "/v1"
    settings.GOOGLE_GEMINI_API_KEY = "test"
    settings.GROK_API_KEY = "test"
    settings.OPENAI_API_KEY = "test"
    settings.OPENROUTER_API_KEY = "test"
    settings.ANTHROPIC_BASE_URL = server.url
    settings.ANTHROPIC_API_KEY = "test"
    settings.DEFAULT_AGENT_LLM = "gemini"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory) -> Iterator[object]:
    """An empty database with every migration applied, on the database the suite runs on (a SQLite
    file, or a MariaDB database of its own): the process tests' and the live sites' databases are
    copies of it (`ChildDatabase.copy_from`, engine/tests/processes.py). Copy it, never write to it."""
    from engine.tests.processes import migrated

    database = migrated(tmp_path_factory.mktemp("migrated"), suffix=f"_migrated_{secrets.token_hex(3)}")
    try:
        yield database
    finally:
        database.drop()


@pytest.fixture(scope="session")
def migrated_sqlite(request, tmp_path_factory) -> Path:
    """A SQLite file with every migration applied, whatever database the suite runs on: a test copies
    it where a child process expects its SQLite database instead of migrating from scratch (seconds of
    CPU each time). On a SQLite run it is `migrated_database`'s file. Copy it, never write to it."""
    if not os.environ.get("DATABASE_URL", "").startswith("mysql"):
        return request.getfixturevalue("migrated_database").path
    database = tmp_path_factory.mktemp("migrated-sqlite") / "cindy.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTEST_CURRENT_TEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="cindy_site.settings",
        CINDY_ENV_FILE=os.devnull,
        CINDY_SQLITE_PATH=str(database),
        SECRET_KEY="test-only",
        CINDY_SESSION_KEY="test-only",
        LOG_LEVEL="ERROR",
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a bound, not an expected time (a loaded machine)
    )
    assert done.returncode == 0, f"migrate failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    return database
