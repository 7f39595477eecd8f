"""A planning task that kills its worker, in real processes (`runagents --no-workers` + `runworkers`).

The worker running one chat's planning is SIGKILLed inside its LLM call, each time the turn is run
again: the sentinel respawns that worker only (the pusher, the monitor and the other worker keep their
pids, no "task workers replaced"), the turn is queued again at once, and at CINDY_TASK_MAX_DEATHS
deaths it fails with a reason naming the chat and the message, shown once in the activity stream and
logged once as an ERROR. A message in another chat is then answered as usual.
"""

from __future__ import annotations

import os
import signal
from urllib.parse import urlsplit

import pytest

from engine.tests.chaos import ChaosLLM, Driver, children, connected_to, pending_chats, running
from engine.tests.processes import group_alive, start_gateway, wait_for

pytestmark = pytest.mark.slow

WORKERS = 2
MAX_DEATHS = 2
REASON = f"killed its task worker {MAX_DEATHS} times"


def test_a_task_that_kills_its_worker_is_counted_and_fails_without_replacing_the_pool(child):
    env, db, llm, tmp = child
    env = env | {"CINDY_Q_WORKERS": str(WORKERS), "CINDY_TASK_MAX_DEATHS": str(MAX_DEATHS)}
    model = ChaosLLM()
    llm.set_responder(model)
    port = urlsplit(llm.url).port
    log, workers_log = tmp / "gateway.log", tmp / "workers.log"
    gateway = start_gateway(env, log, "runagents", "--no-workers")
    workers = start_gateway(env, workers_log, "runworkers")
    driver = Driver(env)
    try:
        pool = wait_for(
            lambda: children(workers.pid) if len(children(workers.pid)) == WORKERS + 2 else [],
            "the task worker pool",
            log,
        )
        pusher_and_monitor = pool[WORKERS:]
        killed = []
        model.hold()
        driver.say("Crasher", "this turn kills its worker")
        for death in range(MAX_DEATHS):
            wait_for(model.held.is_set, f"planning call {death + 1} to hold", workers_log)
            live = [pid for pid in children(workers.pid) if pid not in pusher_and_monitor]
            victim = wait_for(lambda live=live: connected_to(live, port), "the busy worker", workers_log)[0]
            if death + 1 < MAX_DEATHS:
                model.hold()  # the run after this death holds too
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
        failed = wait_for(
            lambda: db.query(
                "SELECT id, error, params FROM conversations_tasknode "
                f"WHERE kind = 'received' AND status = 'failed' AND error LIKE '%{REASON}%'"
            ),
            "the planning node to fail after its deaths",
            workers_log,
            deadline=60,
        )
        model.release()
        assert len(failed) == 1, failed
        node_id, error, _params = failed[0]
        conversation, message = db.query(
            "SELECT g.conversation_id, g.target_message_id FROM conversations_tasknode n "
            f"JOIN conversations_taskgraph g ON n.graph_id = g.id WHERE n.id = {node_id}"
        )[0]
        assert f"conversation {conversation} (" in error and f"message {message}" in error, error
        events = db.query(
            "SELECT kind FROM conversations_activityevent "
            f"WHERE node_id = {node_id} AND summary LIKE '%{REASON}%'"
        )
        assert events == [("node_failed",)], events
        errors = [
            line for line in workers_log.read_text().splitlines() if " ERROR " in line and REASON in line
        ]
        assert len(errors) == 1, workers_log.read_text()[-4000:]
        replaced = db.query(
            "SELECT COUNT(*) FROM conversations_activityevent WHERE summary LIKE 'task workers replaced%'"
        )[0][0]
        assert replaced == 0, "a task's deaths replaced the whole pool"
        assert all(running(pid) for pid in pusher_and_monitor), "the pusher or monitor was replaced"
        assert set(pusher_and_monitor) <= set(children(workers.pid))
        survivors = [pid for pid in pool[:WORKERS] if pid not in killed]
        assert all(running(pid) for pid in survivors), f"workers {survivors} were replaced"

        before = pending_chats(db)
        driver.say("Bystander", "is anyone there?")
        wait_for(lambda: pending_chats(db) == before, "the other chat's answer", workers_log, deadline=60)
    finally:
        model.release()
        driver.close()
        for process in (gateway, workers):
            if group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
