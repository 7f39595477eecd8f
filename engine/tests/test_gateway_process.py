"""The real `runagents` process: graceful SIGTERM, and SIGKILL in the middle of a graph.

These start real processes on their own database: a temporary SQLite file, or, when DATABASE_URL
points at MySQL/MariaDB, a dedicated database created and dropped here. The LLM is the FakeLLMServer
in this process. Waiting for the child is bounded polling with deadlines, the only way to observe
another process.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from engine.tests.processes import (
    agent_texts,
    alive,
    group_alive,
    manage,
    plan,
    start_gateway,
    wait_for,
    workers_pid,
)

pytestmark = pytest.mark.slow


def stacks(log) -> str:
    """The thread stacks faulthandler wrote to the log: each frame line names its file."""
    text = log.read_text(errors="replace")
    return "".join(part for part in text.split("(most recent call first):")[1:])


def test_sigterm_stops_the_gateway_within_seconds_and_releases_its_leases(child):
    env, db, _llm, tmp = child
    log = tmp / "gateway.log"
    process = start_gateway(env, log)
    try:
        wait_for(lambda: db.query("SELECT holder FROM agents_agentlease"), "the agent lease", log)
        workers = wait_for(lambda: workers_pid(log), "the task workers", log)
        wait_for(lambda: "task workers running" in log.read_text(), "the pool started", log)
        # SIGUSR1 writes every thread's stack to the log and stops nothing (manage.py: cindy_site.startup).
        for pid, name in ((process.pid, "runagents.py"), (workers, "runworkers.py")):
            os.kill(pid, signal.SIGUSR1)
            wait_for(lambda name=name: name in stacks(log), f"{name}'s stacks in the log", log)
        assert process.poll() is None and alive(workers)
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
        if group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)


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
