"""A second `runagents` whose agents are all driven by another gateway, as real processes.

It stands by, with names or without: it says once which agent is held by whom, starts no task
workers, and takes the agents over when their gateway stops; it never exits for that reason. A named
gateway killed with SIGKILL and restarted at once, as a supervisor does, takes its agents over at
once: the lease's holder was a process of this host that no longer exists.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from engine.tests.processes import start_gateway, wait_for, workers_pid

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


def test_runagents_with_names_all_held_elsewhere_stands_by_and_takes_over_when_the_holder_stops(child):
    env, db, _llm, tmp = child
    first_log, second_log = tmp / "first.log", tmp / "second.log"
    first = start_gateway(env, first_log)
    second = None
    try:
        holder = wait_for(lambda: _holder(db), "the first gateway's lease", first_log)
        second = start_gateway(env, second_log, "runagents", "Wendy")
        wait_for(lambda: "nothing to do" in second_log.read_text(), "the standby notice", second_log)
        assert f"Wendy by {holder}" in second_log.read_text()
        assert second.poll() is None  # still running: it does not exit

        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0
        wait_for(lambda: "holding agent Wendy" in second_log.read_text(), "the takeover", second_log)
        assert second_log.read_text().count("nothing to do") == 1
    finally:
        _stop(first)
        if second is not None:
            _stop(second)


def test_a_named_gateway_killed_and_restarted_at_once_takes_its_agent_over_before_the_lease_ends(child):
    env, db, _llm, tmp = child
    env = {**env, "CINDY_LEASE_SECONDS": "300"}  # waiting for the lease would fail the test
    first_log, second_log = tmp / "first.log", tmp / "second.log"
    first = start_gateway(env, first_log, "runagents", "Wendy")
    second = None
    try:
        holder = wait_for(lambda: _holder(db), "the first gateway's lease", first_log)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        second = start_gateway(env, second_log, "runagents", "Wendy")
        wait_for(lambda: "holding agent Wendy" in second_log.read_text(), "the takeover", second_log, 90)
        assert _holder(db) not in ("", holder)
        text = second_log.read_text()
        assert "whose process no longer exists" in text and "nothing to do" not in text
        assert second.poll() is None
    finally:
        _stop(first)
        if second is not None:
            _stop(second)
