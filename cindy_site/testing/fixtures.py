"""Pytest fixtures shared by the apps: the LLM seam (a FakeLLMServer with every provider pointed at
it), and the databases migrated once per run (shared by the run's test processes) that the tests starting Cindy's
processes copy: `migrated_database` on the database the suite runs on, `migrated_sqlite` a SQLite file."""

from __future__ import annotations

import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management.commands import flush

from cindy_site.testing.fake_llm import FakeLLMServer
from cindy_site.testing.once_per_run import once_per_run


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


def sqlite_child_env(database: Path, **extra: str) -> dict[str, str]:
    """The environment of a Cindy process a test starts on a SQLite file of its own: this process's
    environment without the suite's database choice (DATABASE_URL) or pytest's marker, no `.env`
    file, test keys, then `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTEST_CURRENT_TEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="cindy_site.settings",
        CINDY_ENV_FILE=os.devnull,
        CINDY_SQLITE_PATH=str(database),
        SECRET_KEY="test-only",
        CINDY_SESSION_KEY="test-only",
    )
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory) -> Iterator[object]:
    """An empty database with every migration applied, on the database the suite runs on (a SQLite
    file, or a MariaDB database of its own): the process tests' and the live sites' databases are
    copies of it (`ChildDatabase.copy_from`, engine/tests/processes.py). Copy it, never write to it."""
    from engine.tests.processes import migrated

    def make(directory: Path):
        return migrated(directory, suffix=f"_migrated_{secrets.token_hex(3)}")

    # One migration for the whole run, whatever the number of test processes.
    with once_per_run(tmp_path_factory, "migrated", make, lambda database: database.drop()) as database:
        yield database


@pytest.fixture(scope="session")
def migrated_sqlite(request, tmp_path_factory) -> Iterator[Path]:
    """A SQLite file with every migration applied, whatever database the suite runs on: a test copies
    it where a child process expects its SQLite database instead of migrating from scratch (seconds of
    CPU each time). On a SQLite run it is `migrated_database`'s file. Copy it, never write to it."""
    if not os.environ.get("DATABASE_URL", "").startswith("mysql"):
        yield request.getfixturevalue("migrated_database").path
        return
    with once_per_run(tmp_path_factory, "migrated-sqlite", _migrate_sqlite, lambda path: None) as path:
        yield path


def _migrate_sqlite(directory: Path) -> Path:
    """A SQLite file in `directory` with every migration applied."""
    database = directory / "cindy.sqlite3"
    env = sqlite_child_env(database, LOG_LEVEL="ERROR")
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


@pytest.fixture(scope="session")
def django_db_setup(
    request, django_test_environment, django_db_blocker, django_db_modify_db_settings, migrated_database
):
    """pytest-django's test database (each xdist process its own), made as a copy of the run's
    `migrated_database` instead of by a migration of its own.

    A migration costs about 20 s of CPU on SQLite (minutes on MariaDB) and the test process runs one
    for `migrated_database` anyway; the copy takes a fraction of a second and holds the same tables,
    rows (seeded prices, content types, permissions, the staff roles that `post_migrate` syncs) and,
    on MariaDB, the same collation. On SQLite the copy goes into Django's in-memory test database
    (SQLite's backup API), so the tests run on memory as before. `--reuse-db` and `--no-migrations`
    keep pytest-django's own way."""
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases

    if request.config.getvalue("reuse_db") or request.config.getvalue("nomigrations"):
        with django_db_blocker.unblock():
            config = setup_databases(
                verbosity=0, interactive=False, keepdb=bool(request.config.getvalue("reuse_db"))
            )
        yield
        if not request.config.getvalue("reuse_db"):
            with django_db_blocker.unblock():
                teardown_databases(config, verbosity=0)
        return

    connection = connections["default"]
    creation = connection.creation
    with django_db_blocker.unblock():
        old_name = connection.settings_dict["NAME"]
        test_name = creation._get_test_db_name()
        creation._create_test_db(verbosity=0, autoclobber=True, keepdb=False)
        connection.close()
        django_settings.DATABASES[connection.alias]["NAME"] = test_name
        connection.settings_dict["NAME"] = test_name
        if connection.vendor == "sqlite":
            connection.ensure_connection()
            with closing(sqlite3.connect(migrated_database.path)) as source:
                source.backup(connection.connection)
        else:
            from engine.tests.processes import mysql_copy

            mysql_copy(migrated_database.conn_args, migrated_database.name, test_name)
        connection.ensure_connection()
        migrated_rows = MigratedRows.read(connection)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(flush, "emit_post_migrate_signal", migrated_rows.restore)
            yield
    finally:
        with django_db_blocker.unblock():
            creation.destroy_test_db(old_name, verbosity=0, keepdb=False)


class MigratedRows:
    """The rows the migrated test database starts with (content types, permissions, the staff roles
    and their permissions, the seeded prices), put back after a transactional test's flush instead of
    the `post_migrate` signal the flush would send.

    A transactional test ends with Django's `flush`, which empties every table and then sends
    `post_migrate`, whose receivers build the content types, the permissions and the roles again one
    query at a time: about 0.19 s of the 0.23 s of each flush on MariaDB, measured under cProfile over
    three tests of llm/tests/test_recalled.py, for a few hundred transactional tests a run. Putting the
    same rows back is one INSERT per table. The rows keep their ids, as the migrated database has them.
    """

    def __init__(self, alias: str, tables: list[tuple[str, list[str], list[tuple]]]) -> None:
        self.alias = alias
        self.tables = tables

    @classmethod
    def read(cls, connection) -> MigratedRows:
        """The rows of the tables `flush` empties (the same `django_table_names` call), where any."""
        tables = []
        with connection.cursor() as cursor:
            for table in connection.introspection.django_table_names(only_existing=True, include_views=False):
                cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
                rows = cursor.fetchall()
                if rows:
                    tables.append((table, [column[0] for column in cursor.description], list(rows)))
        return cls(connection.alias, tables)

    def restore(self, verbosity: int = 0, interactive: bool = False, db: str = "default", **kwargs) -> None:
        """`emit_post_migrate_signal`'s place in `flush`: the migrated rows, back in the emptied tables."""
        from django.db import connections, transaction

        connection = connections[db]
        if db != self.alias:
            raise RuntimeError(f"MigratedRows holds the rows of database {self.alias!r}, not {db!r}")
        quote = connection.ops.quote_name
        with transaction.atomic(using=db), connection.constraint_checks_disabled():
            with connection.cursor() as cursor:
                for table, columns, rows in self.tables:
                    names = ", ".join(quote(column) for column in columns)
                    marks = ", ".join(["%s"] * len(columns))
                    cursor.executemany(f"INSERT INTO {quote(table)} ({names}) VALUES ({marks})", rows)
