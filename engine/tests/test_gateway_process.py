"""The real `runagents` process: graceful SIGTERM, and SIGKILL in the middle of a graph.

These start real processes on their own database: a temporary SQLite file, or, when DATABASE_URL
points at MySQL/MariaDB, a dedicated database created and dropped here. The LLM is the FakeLLMServer
in this process. Waiting for the child is bounded polling with deadlines, the only way to observe
another process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from cindy_site.testing.fake_llm import FakeLLMServer

pytestmark = pytest.mark.slow

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
DEADLINE_SECONDS = 90


class ChildDatabase:
    """A throwaway database for child processes, and raw SQL reads of it from the test."""

    def __init__(self, tmp_path: Path) -> None:
        url = os.environ.get("DATABASE_URL", "")
        self.mysql = url.startswith("mysql")
        if self.mysql:
            parts = urlsplit(url)
            self.name = f"cindy_proc_{os.getpid()}"
            self.conn_args = {
                "host": parts.hostname or "127.0.0.1",
                "port": parts.port or 3306,
                "user": parts.username or "root",
                "password": parts.password or "",
            }
            self.url = f"{parts.scheme}://{parts.netloc}/{self.name}"
            import MySQLdb

            with MySQLdb.connect(**self.conn_args) as conn:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS {self.name}")
                conn.cursor().execute(f"CREATE DATABASE {self.name} CHARACTER SET utf8mb4")
        else:
            self.path = tmp_path / "cindy.sqlite3"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env["CINDY_ENV_FILE"] = os.devnull
        if self.mysql:
            env["DATABASE_URL"] = self.url
        else:
            env["CINDY_SQLITE_PATH"] = str(self.path)
        return env

    def query(self, sql: str) -> list[tuple]:
        if self.mysql:
            import MySQLdb

            with MySQLdb.connect(db=self.name, charset="utf8mb4", **self.conn_args) as conn:
                cursor = conn.cursor()
                cursor.execute(sql)
                return list(cursor.fetchall())
        with sqlite3.connect(self.path, timeout=30) as conn:
            return conn.execute(sql).fetchall()

    def drop(self) -> None:
        if self.mysql:
            import MySQLdb

            with MySQLdb.connect(**self.conn_args) as conn:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS {self.name}")


@pytest.fixture
def child(tmp_path):
    """A migrated database with one sandbox agent, and an LLM server for the children."""
    db = ChildDatabase(tmp_path)
    llm = FakeLLMServer().start()
    env = db.env() | {
        "SECRET_KEY": "test-only",
        "CINDY_SESSION_KEY": "test-only",
        "GEMINI_BASE_URL": llm.url,
        "GOOGLE_GEMINI_API_KEY": "test",
        "DEFAULT_AGENT_LLM": "gemini",
        "LLM_MAX_RETRIES": "0",
        "CINDY_TICK_SECONDS": "0.05",
        "CINDY_LEASE_SECONDS": "3",
        "CINDY_Q_WORKERS": "1",
        "LOG_LEVEL": "INFO",
    }
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(
        env,
        "shell",
        "-c",
        "from agents.models import Agent; Agent.objects.create(name='Wendy', phone='+1555', "
        "instructions='You are Wendy.', transport='sandbox', llm='gemini', start_typing_delay=1, "
        "typing_speed=1000)",
    )
    try:
        yield env, db, llm, tmp_path
    finally:
        llm.stop()
        db.drop()


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, MANAGE, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


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
        "SELECT m.text FROM conversations_sandboxmessage m JOIN conversations_sandboxuser u "
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


def test_sigterm_stops_the_gateway_within_seconds_and_releases_its_leases(child):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        wait_for(lambda: db.query("SELECT holder FROM agents_agentlease"), "the agent lease", log)
        workers = wait_for(lambda: workers_pid(log), "the task workers", log)
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert process.wait(timeout=15) == 0
        assert time.monotonic() - started < 10
        assert db.query("SELECT holder FROM agents_agentlease") == []
        assert not alive(workers)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def test_the_task_workers_stop_when_the_gateway_is_killed(child):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        workers = wait_for(lambda: workers_pid(log), "the task workers", log)
        wait_for(lambda: db.query("SELECT holder FROM agents_agentlease"), "the agent lease", log)
        process.kill()  # the gateway alone, not its process group: the parent-death signal must act
        process.wait(timeout=10)
        wait_for(lambda: not alive(workers), "the task workers to stop", log, deadline=30)
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigkill_mid_graph_loses_nothing_and_duplicates_nothing(child):
    env, db, llm, tmp = child
    log = tmp / "gateway.log"
    words = [f"part {i}" for i in range(1, 6)]
    llm.set_default_reply(plan(*words))
    manage(env, "sandbox", "say", "Wendy", "hello")
    process = start_gateway(env, log)
    try:
        wait_for(lambda: len(agent_texts(db)) >= 2, "the first sends", log)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

        process = start_gateway(env, log)
        wait_for(lambda: len(agent_texts(db)) >= len(words), "the rest of the graph", log)
        wait_for(
            lambda: db.query("SELECT status FROM conversations_taskgraph") == [("done",)],
            "the graph done",
            log,
        )
        assert agent_texts(db) == words

        # A message sent while the gateway is dead is caught up after the restart, and answered.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        llm.set_default_reply(plan("yes, still here"))
        manage(env, "sandbox", "say", "Wendy", "still there?")
        process = start_gateway(env, log)
        wait_for(lambda: agent_texts(db)[-1:] == ["yes, still here"], "the answer after restart", log)
        inbound = db.query("SELECT text FROM conversations_message WHERE is_agent = 0 ORDER BY message_id")
        assert inbound == [("hello",), ("still there?",)]
        assert agent_texts(db) == [*words, "yes, still here"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def test_sigkill_of_a_worker_mid_planning_is_recovered_without_a_duplicate(child):
    env, db, llm, tmp = child
    env = env | {"CINDY_NODE_LEASE_SECONDS": "4"}
    log = tmp / "gateway.log"
    llm.stall_next(60)  # the first planning call hangs until its worker is killed
    llm.set_default_reply(plan("sorry, I was away"))
    gateway = start_gateway(env, log, "runagents", "--no-workers")
    workers = start_gateway(env, log, "qcluster")
    try:
        manage(env, "sandbox", "say", "Wendy", "hello")
        wait_for(lambda: len(llm.requests) >= 1, "the planning call", log)
        os.killpg(workers.pid, signal.SIGKILL)
        workers.wait(timeout=10)
        assert db.query("SELECT status FROM conversations_tasknode") == [("running",)]

        workers = start_gateway(env, log, "qcluster")
        wait_for(
            lambda: agent_texts(db) == ["sorry, I was away"], "the reply after the node lease expired", log
        )
        wait_for(
            lambda: db.query("SELECT status FROM conversations_taskgraph") == [("done",)],
            "the graph done",
            log,
        )
        assert agent_texts(db) == ["sorry, I was away"]
    finally:
        for process in (gateway, workers):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
