"""An agent asleep per its Daily Schedule records messages but acts only when it wakes."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from conversations.models import Message, NodeStatus, TaskNode
from engine.tests.harness import Harness
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


def test_a_message_at_night_is_recorded_and_answered_once_the_agent_wakes(agent, clock, fake_llm):
    agent.timezone = "Europe/Paris"
    agent.daily_schedule = "Night owl, but not that much.\nAsleep: 23:00-07:30"
    agent.save()
    clock.set(dt.datetime(2026, 1, 5, 23, 30, tzinfo=dt.UTC))  # 00:30 in Paris
    harness = Harness(clock)
    harness.start()
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "Morning! Just saw this."}]))

    sandbox_say(agent=agent, text="are you up?")
    sandbox_say(agent=agent, text="guess not")
    harness.settle(until=dt.datetime(2026, 1, 6, 6, 29, tzinfo=dt.UTC))

    assert Message.objects.filter(is_agent=False).count() == 2
    received = TaskNode.objects.get(kind="received", status=NodeStatus.PENDING)
    assert fake_llm.requests == []

    clock.set(dt.datetime(2026, 1, 6, 6, 30, tzinfo=dt.UTC))  # 07:30 in Paris
    harness.settle()
    received.refresh_from_db()
    assert received.status == NodeStatus.DONE
    assert len(fake_llm.requests) == 1
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Morning! Just saw this."
