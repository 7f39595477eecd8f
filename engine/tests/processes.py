"""Real processes for the engine's process tests: a throwaway database, manage.py children, polling.

The children run on their own database: a temporary SQLite file, or, when DATABASE_URL points at
MySQL/MariaDB, a dedicated database created and dropped here. It is migrated once per run (the
template) and copied for each test. The LLM is a FakeLLMServer in the test
process. Waiting for a child is bounded polling with deadlines, the only way to observe another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from cindy_site.testing.fake_llm import FakeLLMServer

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
DEADLINE_SECONDS = 90


class ChildDatabase:
    """A throwaway database for child processes, and raw SQL reads of it from the test."""

    def __init__(self, tmp_path: Path, *, suffix: str = "") -> None:
        url = os.environ.get("DATABASE_URL", "")
        self.mysql = url.startswith("mysql")
        if self.mysql:
            parts = urlsplit(url)
            self.name = f"cindy_proc_{os.getpid()}{suffix}"
            self.conn_args = {
                "host": parts.hostname or "127.0.0.1",
                "port": parts.port or 3306,
                "user": parts.username or "root",
                "password": parts.password or "",
            }
            self.url = f"{parts.scheme}://{parts.netloc}/{self.name}"
            import MySQLdb

            # The collation of the suite's own test database (settings' TEST), so that a copy of the
            # run's migrated database can be the test database too (cindy_site/testing/fixtures.py).
            collation = settings.DATABASES["default"].get("TEST", {}).get("COLLATION")
            with MySQLdb.connect(**self.conn_args) as conn:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS {self.name}")
                conn.cursor().execute(
                    f"CREATE DATABASE {self.name} CHARACTER SET utf8mb4"
                    + (f" COLLATE {collation}" if collation else "")
                )
        else:
            self.path = tmp_path / "cindy.sqlite3"
        #: The test's one connection for `query` (MariaDB/MySQL): the tests poll with it every 0.1 s
        #: while they wait for the processes, and a connection each time cost more than the read.
        self._reader = None
        self._reader_lock = threading.Lock()

    def __getstate__(self) -> dict:
        # Shared between the run's test processes by pickle (once_per_run): without the connection.
        return {k: v for k, v in self.__dict__.items() if k not in ("_reader", "_reader_lock")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _reader=None, _reader_lock=threading.Lock())

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env["CINDY_ENV_FILE"] = os.devnull
        if self.mysql:
            env["DATABASE_URL"] = self.url
        else:
            env["CINDY_SQLITE_PATH"] = str(self.path)
        return env

    def query(self, sql: str) -> list[tuple]:
        """The rows of `sql`, as committed now (autocommit: each read sees the latest commits)."""
        if self.mysql:
            import MySQLdb

            with self._reader_lock:
                if self._reader is None:
                    self._reader = MySQLdb.connect(
                        db=self.name, charset="utf8mb4", autocommit=True, **self.conn_args
                    )
                try:
                    with self._reader.cursor() as cursor:
                        cursor.execute(sql)
                        return list(cursor.fetchall())
                except MySQLdb.OperationalError:
                    self._close_reader()  # the next read connects again
                    raise
        with sqlite3.connect(self.path, timeout=30) as conn:
            return conn.execute(sql).fetchall()

    def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(Exception):
                reader.close()

    def drop(self) -> None:
        if self.mysql:
            import MySQLdb

            with self._reader_lock:
                self._close_reader()

            with MySQLdb.connect(**self.conn_args) as conn:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS {self.name}")

    def copy_from(self, template: ChildDatabase) -> None:
        """Make this (empty) database a copy of `template`: its tables with their indexes, foreign
        keys and auto-increment counters, and its rows."""
        if not self.mysql:
            shutil.copyfile(template.path, self.path)
            return
        mysql_copy(self.conn_args, template.name, self.name)


def mysql_copy(conn_args: dict, source: str, target: str) -> None:
    """Copy every table of MySQL/MariaDB database `source` into the empty database `target` on the
    same server: definitions (indexes, foreign keys, auto-increment counters, collations) and rows."""
    import MySQLdb

    with MySQLdb.connect(**conn_args) as conn:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_type = 'BASE TABLE'",
            [source],
        )
        tables = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "SELECT CONCAT('view ', table_name) FROM information_schema.views WHERE table_schema = %s "
            "UNION ALL SELECT CONCAT('trigger ', trigger_name) FROM information_schema.triggers "
            "WHERE trigger_schema = %s",
            [source, source],
        )
        others = [row[0] for row in cursor.fetchall()]
        assert not others, (
            f"database {source} holds {', '.join(others)}, which mysql_copy (engine/tests/processes.py) "
            "does not copy: copy them there too"
        )
        cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
        for table in tables:
            cursor.execute(f"SHOW CREATE TABLE `{source}`.`{table}`")
            create = cursor.fetchone()[1]
            cursor.execute(f"USE `{target}`")
            cursor.execute(create)
            cursor.execute(f"INSERT INTO `{target}`.`{table}` SELECT * FROM `{source}`.`{table}`")
        cursor.execute("SET FOREIGN_KEY_CHECKS = 1")
        conn.commit()


def child_settings(db: ChildDatabase) -> dict[str, str]:
    return db.env() | {
        "SECRET_KEY": "test-only",
        "CINDY_SESSION_KEY": "test-only",
        "LLM_MAX_RETRIES": "0",
        # With wake-ups on (the default) every write through Cindy's code wakes the gateway at once;
        # the idle pass only backs up what nobody announces (a lease running out, a row changed by
        # raw SQL). A pass every 0.05 s cost an idle gateway and its pool about 16% of a core.
        "CINDY_TICK_SECONDS": "0.2",
        "CINDY_IDLE_PASS_SECONDS": "0.5",
        "CINDY_LEASE_SECONDS": "3",
        "CINDY_Q_WORKERS": "1",
        "LOG_LEVEL": "INFO",
    }


def migrated(workdir: Path, *, suffix: str) -> ChildDatabase:
    """An empty database with every migration applied (the caller drops it)."""
    db = ChildDatabase(workdir, suffix=suffix)
    try:
        manage(child_settings(db), "migrate", "--noinput", "-v", "0")
    except BaseException:
        db.drop()
        raise
    return db


@pytest.fixture(scope="session")
def child_template(tmp_path_factory, migrated_database):
    """A copy of the run's migrated database (`migrated_database`) with the sandbox agent Wendy: each
    test's child database is a copy of this one (a migration takes seconds; a copy, a fraction of one)."""
    db = ChildDatabase(tmp_path_factory.mktemp("child-template"), suffix=f"_template_{secrets.token_hex(3)}")
    try:
        db.copy_from(migrated_database)
        manage(
            child_settings(db),
            "shell",
            "-c",
            "from agents.models import Agent; Agent.objects.create(name='Wendy', phone='+1555', "
            "instructions='You are Wendy.', transport='sandbox', llm='gemini', start_typing_delay=1, "
            "typing_speed=1000)",
        )
        yield db
    finally:
        db.drop()


@contextmanager
def child_on(
    tmp_path: Path, template: ChildDatabase
) -> Iterator[tuple[dict[str, str], ChildDatabase, FakeLLMServer, Path]]:
    """A copy of `template` for the children, and an LLM server for them: (env, db, llm, tmp_path)."""
    db = ChildDatabase(tmp_path)
    db.copy_from(template)
    llm = FakeLLMServer().start()
    env = child_settings(db) | {
        "SECRET_KEY": "test-only",
        "CINDY_SESSION_KEY": "test-only",
        "GEMINI_BASE_URL": llm.url,
        "GOOGLE_GEMINI_API_KEY": "test",
        "DEFAULT_AGENT_LLM": "gemini",
    }
    try:
        yield env, db, llm, tmp_path
    finally:
        llm.stop()
        db.drop()


@pytest.fixture
def child(tmp_path, child_template):
    """A migrated database with one sandbox agent (a copy of the template), and an LLM server for
    the children."""
    with child_on(tmp_path, child_template) as parts:
        yield parts


#: A bound on one `manage.py` child, not an expected time: a migration takes about 20 s of CPU, which
#: on two cores shared with other runs (load 10 and more) is minutes of wall time.
MANAGE_TIMEOUT_SECONDS = 600


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, MANAGE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=MANAGE_TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def shell_child(env: dict[str, str], code: str) -> subprocess.Popen:
    """A long-lived `manage.py shell` child running `code`, which serves requests read from its stdin
    and answers on its stdout: repeated work costs no Python start and Django set-up each time."""
    return subprocess.Popen(
        [sys.executable, MANAGE, "shell", "--no-imports", "-c", code],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def start_gateway(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    # Its own session, so the SIGKILL below reaches the gateway and its worker child together.
    return subprocess.Popen(
        [sys.executable, MANAGE, *(args or ("runagents",))],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(predicate, what: str, log: Path, deadline: float = DEADLINE_SECONDS):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; gateway log:\n{log.read_text()[-5000:]}")


def agent_texts(db: ChildDatabase) -> list[str]:
    rows = db.query(
        "SELECT m.text FROM sandbox_sandboxmessage m JOIN sandbox_sandboxuser u "
        "ON m.sender_id = u.id WHERE u.agent_id IS NOT NULL ORDER BY m.message_id"
    )
    return [r[0] for r in rows]


def plan(*texts: str) -> str:
    return json.dumps([{"kind": "send", "text": t} for t in texts])


def workers_pid(log: Path) -> int | None:
    match = re.search(r"started task workers \(pid (\d+)\)", log.read_text() if log.exists() else "")
    return int(match.group(1)) if match else None


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its new parent to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
