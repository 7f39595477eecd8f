"""`./run.sh` for real: piped through `tee`, stopped the way a terminal stops it, and killed outright.

Each run gets a directory that looks like a checkout (symlinks to the sources, a copy of run.sh),
an `.env` of its own, a fresh SQLite file and a free port. Its `.venv` is a stand-in whose python
runs this test's interpreter, with the requirements stamp already written, so nothing is installed.
Every process the run starts carries a marker in its environment; the test finds them by it and
kills any left over at the end (by pid). The tests about stopping start on a copy of the run's
migrated database (`migrated_sqlite`: run.sh's migrate then has nothing to do); the first start on a
fresh database is the sign-in hint test's.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cindy_site.settings import BASE_DIR
from cindy_site.testing.host_processes import free_port, listening, marked_pids

# Cindy runs on its own embedded SQLite here, whatever database the suite uses.
pytestmark = [pytest.mark.slow, pytest.mark.any_database]

START_TIMEOUT = 180  # a fresh database is migrated and the samples imported before the web starts
STOP_TIMEOUT = 60  # the gateway drains for up to 30 s before it is killed
MARK = "CINDY_RUN_TEST_MARK"  # in the environment of every process the test starts
LINKED = [
    "agents",
    "cindy_site",
    "conversations",
    "dashboard",
    "engine",
    "llm",
    "media_catalog",
    "memory",
    "samples",
    "configdir",
    "scripts",
    "static",
    "templates",
    "manage.py",
    "requirements.txt",
]


def _as_a_terminal_starts_a_job() -> None:
    """In the child, before exec: the signals a terminal's job starts with (default actions, none
    blocked), not those of the test process (which code run in it earlier may have ignored or
    blocked; an ignored SIGINT is inherited, and a shell can trap no signal ignored at its start)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _signal_state(pid: int) -> str:
    """A process's state and signal masks from /proc, for a failure message."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "gone"
    return "; ".join(line for line in status.splitlines() if line.startswith(("State", "SigBlk", "SigIgn")))


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)  # polling other processes' state; there is nothing to wait on instead
    return condition()


class Run:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.marker = secrets.token_hex(8)
        self.log = root / "run.log"
        for name in LINKED:
            (root / name).symlink_to(BASE_DIR / name)
        (root / "run.sh").write_bytes((BASE_DIR / "run.sh").read_bytes())
        (root / "run.sh").chmod(0o755)
        bin_dir = root / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        (bin_dir / "python").chmod(0o755)
        requirements = (BASE_DIR / "requirements.txt").read_bytes()
        (root / ".venv" / ".cindy-requirements").write_text(  # as scripts/venv.sh writes it
            f"{hashlib.sha256(requirements).hexdigest()}  requirements.txt\n"
        )
        (root / ".env").write_text(
            "DEBUG=true\nSECRET_KEY=run-script-test\nCINDY_SESSION_KEY=run-script-test\n"
            f"CINDY_SQLITE_PATH={root / 'cindy.sqlite3'}\nCINDY_MEDIA_ROOT={root / 'media'}\n"
            "CINDY_Q_WORKERS=1\n"
        )
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}},
            "CINDY_ENV_FILE": str(root / ".env"),
            "CINDY_PORT": str(self.port),
            MARK: self.marker,
            "PYTHONUNBUFFERED": "1",
        }
        self.shell: subprocess.Popen | None = None

    def start(self) -> None:
        """`./run.sh | tee run.log` as a terminal runs it: one process group for the pipeline."""
        self.shell = subprocess.Popen(
            ["bash", "-c", "./run.sh 2>&1 | tee run.log >/dev/null"],
            cwd=self.root,
            env=self.env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            preexec_fn=_as_a_terminal_starts_a_job,
        )
        started = _wait_until(
            lambda: listening(self.port) and "Press Ctrl-C to stop." in self.output(), START_TIMEOUT
        )
        assert started, f"run.sh did not start within {START_TIMEOUT} s:\n{self.output()}"
        assert _wait_until(lambda: self.has_process("runagents"), 30), self.output()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @staticmethod
    def cmdline(pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""

    def has_process(self, word: str) -> bool:
        for pid in marked_pids(MARK, self.marker):
            try:
                if word.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
            except OSError:
                continue
        return False

    def script_pid(self) -> int:
        for pid in marked_pids(MARK, self.marker):
            try:
                if b"./run.sh" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                    return pid
            except OSError:
                continue
        raise AssertionError("run.sh is not running")

    def all_stopped(self) -> bool:
        return not marked_pids(MARK, self.marker) and not listening(self.port)

    def cleanup(self) -> None:
        for pid in marked_pids(MARK, self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.shell is not None:
            self.shell.wait(timeout=10)


@pytest.fixture
def run(tmp_path) -> Iterator[Run]:
    run = Run(tmp_path)
    try:
        yield run
    finally:
        run.cleanup()


def test_ctrl_c_stops_web_and_gateway_even_when_tee_dies_first(run, migrated_sqlite):
    shutil.copyfile(migrated_sqlite, run.root / "cindy.sqlite3")
    run.start()
    assert "First time? In another terminal" in run.output()

    # What a terminal does on Ctrl-C: SIGINT to every process of the foreground job. tee goes first
    # (it has no handler), so when the script reacts its output has no reader any more.
    tee = next(pid for pid in marked_pids(MARK, run.marker) if run.cmdline(pid).startswith("tee "))
    os.kill(tee, signal.SIGINT)
    assert _wait_until(lambda: tee not in marked_pids(MARK, run.marker), STOP_TIMEOUT), (
        f"tee still runs: {_signal_state(tee)}"
    )
    os.killpg(run.shell.pid, signal.SIGINT)

    stopped = _wait_until(run.all_stopped, STOP_TIMEOUT)
    left = [run.cmdline(pid) for pid in marked_pids(MARK, run.marker)]
    assert stopped, f"still running after Ctrl-C: {left}; port {run.port} open: {listening(run.port)}"


def test_killing_the_script_outright_still_stops_its_services(run, migrated_sqlite):
    shutil.copyfile(migrated_sqlite, run.root / "cindy.sqlite3")
    run.start()
    os.kill(run.script_pid(), signal.SIGKILL)  # no trap can run: the watchdog must stop the services

    stopped = _wait_until(run.all_stopped, STOP_TIMEOUT)
    left = [run.cmdline(pid) for pid in marked_pids(MARK, run.marker)]
    assert stopped, f"still running after run.sh was killed: {left}"


def test_the_sign_in_hint_is_shown_only_until_a_superuser_exists(run):
    run.start()  # on a fresh database: migrated from scratch, the samples imported
    assert "createsuperuser" in run.output()
    os.killpg(run.shell.pid, signal.SIGINT)
    assert _wait_until(run.all_stopped, STOP_TIMEOUT)
    run.shell.wait(timeout=10)

    created = subprocess.run(
        [
            str(run.root / ".venv" / "bin" / "python"),
            "manage.py",
            "createsuperuser",
            "--noinput",
            "--email",
            "owner@example.com",
        ],
        cwd=run.root,
        env={**run.env, "DJANGO_SUPERUSER_USERNAME": "owner", "DJANGO_SUPERUSER_PASSWORD": "x-long-pass-123"},
        capture_output=True,
        text=True,
    )
    assert created.returncode == 0, created.stderr
    run.log.unlink()
    run.start()
    assert "Cindy is running." in run.output()
    assert "createsuperuser" not in run.output()
    assert "First time?" not in run.output()


def test_a_taken_port_stops_the_script_at_once_naming_the_port_and_the_fix(run):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", run.port))
        taken.listen()
        result = subprocess.run(
            ["./run.sh"],
            cwd=run.root,
            env=run.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
        )
    assert result.returncode != 0
    assert f"port {run.port} on 127.0.0.1 is already in use" in result.stderr
    assert f"CINDY_PORT={run.port + 1} ./run.sh" in result.stderr
    assert "Cindy is running." not in result.stdout
    assert not (run.root / "cindy.sqlite3").exists()  # nothing was migrated first
    assert not marked_pids(MARK, run.marker)
