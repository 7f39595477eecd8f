"""A second `runagents` whose agents are all driven by another gateway, as real processes.

Without names it stands by: it says once which agent is held by whom, starts no task workers, and
takes the agents over when their gateway stops. With names that are all held elsewhere it exits at
once with an error naming the holders.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from engine.tests.processes import MANAGE, start_gateway, wait_for, workers_pid

pytestmark = pytest.mark.slow


def _holder(db) -> str:
    rows = db.query("SELECT holder FROM agents_agentlease")
    return rows[0][0] if rows else ""


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def test_a_gateway_whose_agents_are_all_held_stands_by_says_so_and_takes_over_later(child):
    env, db, _llm, tmp = child
    first_log, second_log = tmp / "first.log", tmp / "second.log"
    first = start_gateway(env, first_log)
    second = None
    try:
        holder = wait_for(lambda: _holder(db), "the first gateway's lease", first_log)
        second = start_gateway(env, second_log)
        wait_for(lambda: "nothing to do" in second_log.read_text(), "the standby notice", second_log)
        text = second_log.read_text()
        assert f"held by another gateway (Wendy by {holder})" in text
        assert "standing by without task workers" in text
        assert workers_pid(second_log) is None
        assert len(re.findall("nothing to do", text)) == 1  # said once, not at every pass
        assert second.poll() is None

        first.send_signal(signal.SIGTERM)  # the holder stops: the standby takes the agent over
        assert first.wait(timeout=30) == 0
        wait_for(lambda: "holding agent Wendy" in second_log.read_text(), "the takeover", second_log)
        wait_for(lambda: workers_pid(second_log), "the standby's task workers", second_log)
        assert _holder(db) != holder
        assert second_log.read_text().count("nothing to do") == 1
    finally:
        _stop(first)
        if second is not None:
            _stop(second)


def test_runagents_with_names_all_held_elsewhere_exits_naming_the_holder(child):
    env, db, _llm, tmp = child
    log = tmp / "first.log"
    first = start_gateway(env, log)
    try:
        holder = wait_for(lambda: _holder(db), "the first gateway's lease", log)
        result = subprocess.run(
            [sys.executable, MANAGE, "runagents", "Wendy"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode != 0
        assert "every agent named is driven by another gateway" in result.stderr
        assert f"Wendy by gateway {holder}" in result.stderr
        assert "without names to stand by" in result.stderr
        assert "started task workers" not in result.stdout + result.stderr
    finally:
        _stop(first)
