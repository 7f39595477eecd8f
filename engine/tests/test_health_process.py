"""`manage.py health` against real processes: up, a gateway frozen past its lease, a killed worker pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from engine.tests.processes import MANAGE, group_alive, shell_child, start_gateway, wait_for, workers_pid

pytestmark = pytest.mark.slow


def health(env: dict[str, str]) -> tuple[int, str]:
    """`manage.py health` as an operator runs it: its exit status and what it printed."""
    result = subprocess.run(
        [sys.executable, MANAGE, "health"], env=env, capture_output=True, text=True, timeout=120
    )
    return result.returncode, result.stdout + result.stderr


#: Run in one child for a whole test: the health command again for each line on stdin, its exit
#: status and output back on one line.
_CONSOLE = """
import io, json, sys
from django.core.management import call_command
from django.db import close_old_connections
for _ in sys.stdin:
    close_old_connections()
    out = io.StringIO()
    code = 0
    try:
        call_command("health", stdout=out, stderr=out)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    print("@@health " + json.dumps([code, out.getvalue()]), flush=True)
"""


class HealthConsole:
    """The health command in one long-lived child (the command's own code, through `call_command`, on
    the same settings): polling for a state that takes seconds to come costs a check each time, not
    a Python start and Django set-up each time. The tests still run the real `manage.py health` for
    the states they assert."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = shell_child(env, _CONSOLE)

    def __call__(self) -> tuple[int, str]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("@@health "):
                code, out = json.loads(line[len("@@health ") :])
                return code, out
        raise AssertionError(f"the health console exited with {self.process.wait(10)}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.fixture
def console(child):
    env, _db, _llm, _tmp = child
    probe = HealthConsole(env)
    try:
        yield probe
    finally:
        probe.close()


def wait_health(console: HealthConsole, env, log, *, ok: bool, what: str) -> str:
    """Poll (in `console`) until health is `ok` or not; then confirm with `manage.py health` itself."""
    wait_for(lambda: (console()[0] == 0) == ok, what, log)
    code, out = health(env)
    assert (code == 0) == ok, out
    return out


def test_health_is_down_while_a_gateway_is_frozen_past_its_lease(child, console):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        out = wait_health(console, env, log, ok=True, what="a healthy installation")
        assert "healthy" in out and "Gateway " in out and "Task worker pool workers:" in out
        process.send_signal(signal.SIGSTOP)  # the gateway alone: its worker pool keeps reporting

        def frozen_seen() -> bool:
            # Its heartbeat and its agent's lease both go stale after CINDY_LEASE_SECONDS; the lease,
            # renewed a moment before the heartbeat was written, may be reported first.
            code, out = console()
            return code != 0 and "no heartbeat for" in out

        wait_for(frozen_seen, "health to see the frozen gateway", log)
        code, out = health(env)  # stays so while the gateway is stopped
        assert code == 1 and "the process is stopped, hung or cannot reach the database" in out, out
        wait_for(lambda: "agent Wendy: no gateway drives it" in console()[1], "the lease to expire too", log)
        assert "agent Wendy: no gateway drives it" in health(env)[1]
        process.send_signal(signal.SIGCONT)
        wait_health(console, env, log, ok=True, what="health once the gateway runs again")
    finally:
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGKILL)


def test_health_is_down_after_the_worker_pool_is_killed_until_a_new_one_runs(child, console):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    gateway = start_gateway(env, log, "runagents", "--no-workers")
    workers = start_gateway(env, log, "runworkers")
    try:
        wait_health(console, env, log, ok=True, what="a healthy installation")
        os.killpg(workers.pid, signal.SIGKILL)
        workers.wait(timeout=10)
        code, out = health(env)
        assert code == 1
        assert "task worker pool workers:" in out and f"(pid {workers.pid} on" in out and "is gone" in out
        workers = start_gateway(env, log, "runworkers")
        out = wait_health(console, env, log, ok=True, what="health with a new worker pool")
        assert f"pid {workers.pid} on" in out
    finally:
        for process in (gateway, workers):
            if group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)


def test_health_is_down_after_the_gateway_s_own_worker_pool_is_killed_until_it_restarts_it(child, console):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        wait_health(console, env, log, ok=True, what="a healthy installation")
        pool = workers_pid(log)
        # The gateway restarts its pool 2 s after it exits; `manage.py health` alone takes longer than
        # that to start on a loaded machine, so the gateway is held (SIGSTOP) while health looks, else
        # health may only ever see the new pool.
        process.send_signal(signal.SIGSTOP)
        os.kill(pool, signal.SIGKILL)  # the pool's sentinel alone: the gateway restarts it after a backoff
        code, out = health(env)
        assert code == 1 and f"(pid {pool} on" in out and "is gone" in out
        process.send_signal(signal.SIGCONT)
        out = wait_health(console, env, log, ok=True, what="health once the gateway restarted its workers")
        assert f"pid {pool} on" not in out and "Task worker pool workers:" in out
    finally:
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGKILL)
