"""`./cindy` for real, and the systemd units in deploy/.

The script runs in a directory that looks like a checkout (symlinks to the sources, a copy of the
script), with an `.env` of its own, a fresh SQLite file and a free port. Its `.venv` is a stand-in
whose python runs this test's interpreter, with the requirements stamp already written, so nothing is
installed. The LLM is a FakeLLMServer in this process. Every process the script starts carries a
marker in its environment; the test finds them by it and kills any left over at the end (by pid).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from cindy_site.settings import BASE_DIR
from cindy_site.testing.fake_llm import FakeLLMServer
from cindy_site.testing.host_processes import alive, free_port, listening, marked_pids

UNITS = sorted((BASE_DIR / "deploy").glob("*.service"))
# The service runs on its own embedded SQLite here (or a closed port), whatever database the suite uses.
pytestmark = pytest.mark.any_database
NOT_LINKED = {".git", ".venv", ".env", "var", "cindy", "artifacts", ".pytest_cache", ".ruff_cache"}
DEADLINE = 60
MARK = "CINDY_SERVICE_TEST_MARK"  # in the environment of every process the test starts


def _wait_until(condition, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)  # polling other processes' state; there is nothing to wait on instead
    return condition()


class Checkout:
    def __init__(self, root: Path, llm_url: str) -> None:
        self.root = root
        self.port = free_port()
        self.marker = secrets.token_hex(8)
        self.db = root / "cindy.sqlite3"
        for entry in BASE_DIR.iterdir():
            if entry.name not in NOT_LINKED:
                (root / entry.name).symlink_to(entry)
        shutil.copy2(BASE_DIR / "cindy", root / "cindy")
        bin_dir = root / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        (bin_dir / "python").chmod(0o755)
        requirements = (BASE_DIR / "requirements.txt").read_bytes()
        (root / ".venv" / ".cindy-requirements").write_text(  # as scripts/venv.sh writes it
            f"{hashlib.sha256(requirements).hexdigest()}  requirements.txt\n"
        )
        (root / ".env").write_text(
            "DEBUG=true\nSECRET_KEY=service-script-test\nCINDY_SESSION_KEY=service-script-test\n"
            f"CINDY_SQLITE_PATH={self.db}\nCINDY_MEDIA_ROOT={root / 'media'}\n"
            f"GEMINI_BASE_URL={llm_url}\nGOOGLE_GEMINI_API_KEY=test\nDEFAULT_AGENT_LLM=gemini\n"
            "LLM_MAX_RETRIES=0\nCINDY_TICK_SECONDS=0.2\nCINDY_IDLE_PASS_SECONDS=0.5\n"
            "CINDY_Q_WORKERS=1\n"
        )
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}},
            "CINDY_ENV_FILE": str(root / ".env"),
            "CINDY_PORT": str(self.port),
            MARK: self.marker,
            "PYTHONUNBUFFERED": "1",
        }

    def cindy(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["./cindy", *args],
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def pids(self) -> dict[str, int]:
        return {f.stem: int(f.read_text()) for f in (self.root / "var" / "run").glob("*.pid")}

    def logs(self) -> str:
        return "\n".join(
            f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}"
            for f in sorted((self.root / "var" / "log").glob("*.log"))
        )

    def agent_texts(self) -> list[str]:
        with sqlite3.connect(self.db, timeout=30) as conn:
            rows = conn.execute(
                "SELECT m.text FROM sandbox_sandboxmessage m JOIN sandbox_sandboxuser u "
                "ON m.sender_id = u.id WHERE u.agent_id IS NOT NULL ORDER BY m.message_id"
            ).fetchall()
        return [r[0] for r in rows]

    def cleanup(self) -> None:
        for pid in marked_pids(MARK, self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def checkout(tmp_path) -> Iterator[Checkout]:
    llm = FakeLLMServer().start()
    checkout = Checkout(tmp_path, llm.url)
    checkout.llm = llm
    try:
        yield checkout
    finally:
        checkout.cleanup()
        llm.stop()


@pytest.mark.slow
def test_it_starts_answers_refuses_a_second_copy_and_stops_leaving_nothing(checkout, migrated_sqlite):
    refused = checkout.cindy("start")
    assert refused.returncode == 1
    assert "unapplied migrations" in refused.stderr and "manage.py migrate" in refused.stderr
    assert checkout.cindy("status").returncode == 3

    # What `manage.py migrate` makes of the file, as a copy of the run's migrated one (seconds saved).
    for stale in (
        checkout.db.with_name(checkout.db.name + "-wal"),
        checkout.db.with_name(checkout.db.name + "-shm"),
    ):
        stale.unlink(missing_ok=True)
    shutil.copyfile(migrated_sqlite, checkout.db)
    checkout.manage(
        "shell",
        "-c",
        "from agents.models import Agent; Agent.objects.create(name='Wendy', phone='+1555', "
        "instructions='You are Wendy.', transport='sandbox', llm='gemini', start_typing_delay=1, "
        "typing_speed=1000)",
    )
    started = checkout.cindy("start")
    assert started.returncode == 0, started.stdout + started.stderr + checkout.logs()
    pids = checkout.pids()
    assert set(pids) == {"web", "gateway", "workers"}

    status = checkout.cindy("status")
    assert status.returncode == 0, status.stdout
    for name, pid in pids.items():
        assert f"{name}: running (pid {pid})" in status.stdout

    again = checkout.cindy("start", "gateway")
    assert again.returncode == 1
    assert "already running: gateway" in again.stderr
    assert checkout.pids() == pids

    assert _wait_until(lambda: listening(checkout.port), DEADLINE), checkout.logs()
    checkout.llm.set_default_reply(json.dumps([{"kind": "send", "text": "hello from the service"}]))
    checkout.manage("sandbox", "say", "Wendy", "hello")
    answered = _wait_until(lambda: checkout.agent_texts() == ["hello from the service"], DEADLINE)
    assert answered, checkout.logs()

    gateway_only = checkout.cindy("status", "gateway")
    assert gateway_only.returncode == 0
    assert gateway_only.stdout.strip() == f"gateway: running (pid {pids['gateway']})"

    restarted = checkout.cindy("restart", "workers")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr + checkout.logs()
    assert "stopped workers" in restarted.stdout and "started workers" in restarted.stdout
    assert not alive(pids["workers"])
    assert checkout.pids()["workers"] != pids["workers"]
    assert {k: v for k, v in checkout.pids().items() if k != "workers"} == {
        k: v for k, v in pids.items() if k != "workers"
    }
    pids = checkout.pids()

    stopped = checkout.cindy("stop")
    assert stopped.returncode == 0, stopped.stderr
    for name in pids:
        assert f"stopped {name}" in stopped.stdout
    assert not [pid for pid in pids.values() if alive(pid)]
    assert not marked_pids(MARK, checkout.marker), [
        Path(f"/proc/{p}/cmdline").read_bytes() for p in marked_pids(MARK, checkout.marker)
    ]
    assert not listening(checkout.port)
    assert checkout.pids() == {}
    after = checkout.cindy("status")
    assert after.returncode == 3
    assert after.stdout.count(": stopped") == 3


def test_a_stale_pid_file_does_not_block_a_start_and_status_says_stopped(checkout):
    run_dir = checkout.root / "var" / "run"
    run_dir.mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "30"])  # a live pid that is not a Cindy process
    try:
        (run_dir / "gateway.pid").write_text(f"{sleeper.pid}\n")
        status = checkout.cindy("status", "gateway")
        assert status.returncode == 3
        assert status.stdout.strip() == "gateway: stopped"
        assert not (run_dir / "gateway.pid").exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_taken_port_or_an_unreachable_database_stops_the_start_naming_the_fix(checkout):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", checkout.port))
        taken.listen()
        result = checkout.cindy("start")
    assert result.returncode == 1
    assert f"port {checkout.port} on 127.0.0.1 is already in use" in result.stderr
    assert f"CINDY_PORT={checkout.port + 1}" in result.stderr

    closed = free_port()
    checkout.env["DATABASE_URL"] = f"mysql://root@127.0.0.1:{closed}/cindy"
    result = checkout.cindy("start", "gateway")
    assert result.returncode == 1
    assert "the settings or the database are not ready" in result.stderr
    assert "Can't connect" in result.stderr
    assert not marked_pids(MARK, checkout.marker)
    assert checkout.pids() == {}


def test_an_unknown_service_or_command_is_named_with_the_choices(checkout):
    result = checkout.cindy("status", "gatewy")
    assert result.returncode == 2
    assert 'unknown service "gatewy": name web, gateway or workers' in result.stderr
    result = checkout.cindy("launch")
    assert result.returncode == 2
    assert 'unknown command "launch"' in result.stderr
    assert "./cindy start|stop|restart|status" in result.stderr


def test_logs_past_the_size_limit_are_rotated_at_start_keeping_the_newest(checkout):
    log_dir = checkout.root / "var" / "log"
    log_dir.mkdir(parents=True)
    for i in (1, 2):
        (log_dir / f"web.log.{i}").write_text(f"old {i}\n")
    (log_dir / "web.log").write_text("x" * 200)
    result = subprocess.run(
        ["bash", "-c", ". scripts/service.sh && svc_rotate_log var/log/web.log"],
        cwd=checkout.root,
        env=checkout.env | {"CINDY_LOG_MAX_BYTES": "100", "CINDY_LOG_KEEP": "2"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert not (log_dir / "web.log").exists()
    assert (log_dir / "web.log.1").read_text() == "x" * 200
    assert (log_dir / "web.log.2").read_text() == "old 1\n"
    assert not (log_dir / "web.log.3").exists()


def _unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """A unit file's sections, each key with every value it is given (systemd allows repeats)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if match := re.fullmatch(r"\[(\w+)\]", line):
            current = sections.setdefault(match.group(1), {})
            continue
        key, _, value = line.partition("=")
        assert current is not None, f"{path.name}: {line!r} before any section"
        current.setdefault(key, []).append(value)
    return sections


def test_the_units_restart_every_service_before_its_gateway_leases_lapse():
    assert [u.name for u in UNITS] == ["cindy-gateway@.service", "cindy-web.service", "cindy-workers.service"]
    for path in UNITS:
        unit = _unit(path)
        service = unit["Service"]
        assert service["Restart"] == ["always"], path.name
        assert unit["Unit"]["StartLimitIntervalSec"] == ["0"], path.name
        restart_sec = float(service["RestartSec"][0])
        assert 0 < restart_sec < settings.CINDY_LEASE_SECONDS / 2, (
            f"{path.name}: RestartSec={restart_sec} must be well under CINDY_LEASE_SECONDS "
            f"({settings.CINDY_LEASE_SECONDS})"
        )
        assert service["WorkingDirectory"] == ["/opt/cindy"], path.name
        assert service["EnvironmentFile"] == ["/opt/cindy/.env"], path.name
    gateway = _unit(BASE_DIR / "deploy" / "cindy-gateway@.service")["Service"]
    assert "--auto" in gateway["ExecStart"][0].split()
    assert "--no-workers" in gateway["ExecStart"][0].split()
    assert int(gateway["TimeoutStopSec"][0]) > 30  # the gateway's drain on SIGTERM finishes first


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed (apt-get install systemd)",
)
def test_systemd_analyze_verifies_the_units_without_a_warning(tmp_path):
    """The units as installed in this checkout (paths to it; no User=, which names an account this
    machine may not have): any warning, such as a misspelt value systemd would ignore, fails."""
    names = []
    for path in UNITS:
        text = path.read_text().replace("/opt/cindy", str(BASE_DIR))
        text = "\n".join(line for line in text.splitlines() if not line.startswith("User="))
        name = path.name.replace("@.service", "@1.service")
        (tmp_path / name).write_text(text + "\n")
        names.append(name)
    result = subprocess.run(
        ["systemd-analyze", "verify", *names], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""
