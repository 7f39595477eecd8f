"""The real `runagents` process: a due event fires exactly once when its gateway is SIGKILLed around the
firing time and a second gateway takes the agent over. Bounded polling, as in test_gateway_process."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time

import pytest

from engine.tests.processes import (  # noqa: F401
    agent_texts,
    child,
    manage,
    start_gateway,
    wait_for,
)

pytestmark = pytest.mark.slow

#: Seconds from the first turn to the event's due time: enough for the first gateway to be idle by then.
LEAD_SECONDS = 3


@pytest.mark.parametrize("kill", ["just_before_due", "just_after_firing"])
def test_a_due_event_fires_exactly_once_across_a_sigkill_and_a_takeover(child, kill):  # noqa: F811
    env, db, llm, tmp = child
    log = tmp / "gateway.log"
    later = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(hours=1)
    llm.reply_with(
        json.dumps(
            [
                {"kind": "send", "text": "Hi"},
                {"kind": "event", "intent": "Say that the event fired", "time": later.isoformat()},
            ]
        )
    )
    llm.set_default_reply(json.dumps([{"kind": "send", "text": "Event fired"}]))
    manage(  # the shipped prompt that teaches `event`; then a person writes, as `manage.py sandbox say`
        env,
        "shell",
        "-c",
        "from agents.models import Agent; from engine.tests.cast import teach; "
        "from django.core.management import call_command; "
        "teach(Agent.objects.get(name='Wendy'), 'Task-Event'); call_command('sandbox', 'say', 'Wendy', 'hello')",
    )
    process = start_gateway(env, log)
    try:
        wait_for(lambda: agent_texts(db) == ["Hi"], "the first answer", log)
        assert db.query("SELECT intent FROM memory_scheduledevent") == [("Say that the event fired",)]
        # As an operator would in the admin: bring the event forward to a few seconds from now.
        due = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=LEAD_SECONDS)
        _execute(db, f"UPDATE memory_scheduledevent SET due_at = '{due:%Y-%m-%d %H:%M:%S}'")
        if kill == "just_before_due":
            time.sleep(max(0.0, (due - dt.datetime.now(dt.UTC)).total_seconds() - 0.05))
        else:
            wait_for(lambda: not db.query("SELECT id FROM memory_scheduledevent"), "the event to fire", log)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

        held = log.read_text().count("holding agent Wendy")
        process = start_gateway(env, log)  # takes the agent over once the dead one's lease expires
        # Killed just after firing, the first gateway may have finished the event's turn already:
        # the waits below then pass at once, and the SIGTERM at the end could reach this gateway
        # before it set its handler (while Django starts). It has taken over once it holds the agent.
        wait_for(lambda: log.read_text().count("holding agent Wendy") > held, "the takeover", log)
        wait_for(lambda: "Event fired" in agent_texts(db), "the event's turn", log)
        wait_for(
            lambda: db.query("SELECT status FROM conversations_taskgraph WHERE `trigger` = 'event'")
            == [("done",)],
            "the event's graph done",
            log,
        )
        time.sleep(1.0)  # a duplicate firing would have started a second turn by now (tick: 0.05 s)
        assert agent_texts(db) == ["Hi", "Event fired"]
        assert db.query("SELECT COUNT(*) FROM conversations_taskgraph WHERE `trigger` = 'event'") == [(1,)]
        assert db.query("SELECT id FROM memory_scheduledevent") == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def _execute(db, sql: str) -> None:
    """A committed write to the children's database (naive UTC datetimes, as Django stores them)."""
    if not db.mysql:
        db.query(sql)  # sqlite3's connection context commits
        return
    import MySQLdb

    with MySQLdb.connect(db=db.name, charset="utf8mb4", **db.conn_args) as conn:
        conn.cursor().execute(sql)
        conn.commit()
