"""`manage.py health` against real processes: up, a gateway frozen past its lease, a killed worker pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from engine.tests.processes import MANAGE, group_alive, start_gateway, wait_for, workers_pid

pytestmark = pytest.mark.slow


def health(env: dict[str, str]) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, MANAGE, "health"], env=env, capture_output=True, text=True, timeout=120
    )
    return result.returncode, result.stdout + result.stderr


def wait_health(env, log, *, ok: bool, what: str) -> str:
    def check():
        code, out = health(env)
        return out if (code == 0) == ok else None

    return wait_for(check, what, log)


def test_health_is_down_while_a_gateway_is_frozen_past_its_lease(child):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        out = wait_health(env, log, ok=True, what="a healthy installation")
        assert "healthy" in out and "Gateway " in out and "Task worker pool workers:" in out
        process.send_signal(signal.SIGSTOP)  # the gateway alone: its worker pool keeps reporting

        def frozen_seen() -> str | None:
            # Its heartbeat and its agent's lease both go stale after CINDY_LEASE_SECONDS; the lease,
            # renewed a moment before the heartbeat was written, may be reported first.
            code, out = health(env)
            return out if code != 0 and "no heartbeat for" in out else None

        out = wait_for(frozen_seen, "health to see the frozen gateway", log)
        assert "the process is stopped, hung or cannot reach the database" in out
        wait_for(
            lambda: "agent Wendy: no gateway drives it" in health(env)[1], "the lease to expire too", log
        )
        process.send_signal(signal.SIGCONT)
        wait_health(env, log, ok=True, what="health once the gateway runs again")
    finally:
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGKILL)


def test_health_is_down_after_the_worker_pool_is_killed_until_a_new_one_runs(child):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    gateway = start_gateway(env, log, "runagents", "--no-workers")
    workers = start_gateway(env, log, "runworkers")
    try:
        wait_health(env, log, ok=True, what="a healthy installation")
        os.killpg(workers.pid, signal.SIGKILL)
        workers.wait(timeout=10)
        code, out = health(env)
        assert code == 1
        assert "task worker pool workers:" in out and f"(pid {workers.pid} on" in out and "is gone" in out
        workers = start_gateway(env, log, "runworkers")
        out = wait_health(env, log, ok=True, what="health with a new worker pool")
        assert f"pid {workers.pid} on" in out
    finally:
        for process in (gateway, workers):
            if group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)


def test_health_is_down_after_the_gateway_s_own_worker_pool_is_killed_until_it_restarts_it(child):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        wait_health(env, log, ok=True, what="a healthy installation")
        pool = workers_pid(log)
        # The gateway restarts its pool 2 s after it exits; `manage.py health` alone takes longer than
        # that to start on a loaded machine, so the gateway is held (SIGSTOP) while health looks, else
        # health may only ever see the new pool.
        process.send_signal(signal.SIGSTOP)
        os.kill(pool, signal.SIGKILL)  # the pool's sentinel alone: the gateway restarts it after a backoff
        code, out = health(env)
        assert code == 1 and f"(pid {pool} on" in out and "is gone" in out
        process.send_signal(signal.SIGCONT)
        out = wait_health(env, log, ok=True, what="health once the gateway restarted its workers")
        assert f"pid {pool} on" not in out and "Task worker pool workers:" in out
    finally:
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGCONT)
            os.killpg(process.pid, signal.SIGKILL)
