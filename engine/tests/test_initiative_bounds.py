"""Bounded initiative: xsend chains stop at CINDY_XSEND_MAX_DEPTH hops, xsends and event firings are
rate limited per agent, each refusal is in the activity log, and an xsend carries only its intent."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, TaskGraph
from engine.tests.cast import teach
from engine.tests.harness import tasks
from llm.models import LLMCall
from memory.models import ScheduledEvent
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _taught(agent):
    """The agent has the shipped prompt that teaches xsend."""
    return teach(agent, "Task-XSend")


@pytest.fixture
def two_chats(agent, harness, fake_llm):
    """Wendy has talked with You and with Bob."""
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi Bob"}))
    sandbox_say(agent=agent, text="hello", as_name="Bob")
    harness.settle()
    fake_llm.clear()
    you = Conversation.objects.get(agent=agent, title="You")
    bob = Conversation.objects.get(agent=agent, title="Bob")
    return you, bob


def _refusals() -> list[str]:
    return list(
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED)
        .order_by("pk")
        .values_list("summary", flat=True)
    )


def _ping_pong(agent, harness, fake_llm, two_chats) -> None:
    """Whatever the chat, the model asks to xsend to both: the one it was asked in is always refused,
    and the other one would bounce the turn back and forth forever."""
    you, bob = two_chats
    fake_llm.set_default_reply(
        tasks(
            {"kind": "xsend", "target_channel_id": you.peer_id, "intent": "ping"},
            {"kind": "xsend", "target_channel_id": bob.peer_id, "intent": "ping"},
        )
    )
    sandbox_say(agent=agent, text="go")
    harness.settle()


def test_an_xsend_ping_pong_stops_after_one_hop(agent, harness, fake_llm, two_chats):
    you, _ = two_chats
    _ping_pong(agent, harness, fake_llm, two_chats)

    assert LLMCall.objects.filter(conversation=you).count() == 2  # the greeting, then "go"
    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.XSEND).count() == 1
    # Bob's turn, started by the xsend, may not xsend at all (back to You, or anywhere).
    assert any("CINDY_XSEND_MAX_DEPTH is 1" in r for r in _refusals())
    graph = TaskGraph.objects.get(trigger=TaskGraph.Trigger.XSEND)
    assert graph.context["xsend_depth"] == 1


def test_a_deeper_chain_is_allowed_when_configured(agent, harness, fake_llm, two_chats, settings):
    settings.CINDY_XSEND_MAX_DEPTH = 2
    _ping_pong(agent, harness, fake_llm, two_chats)

    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.XSEND).count() == 2
    assert sorted(
        TaskGraph.objects.filter(trigger="xsend").values_list("context__xsend_depth", flat=True)
    ) == [1, 2]


def test_xsends_beyond_the_hourly_limit_are_refused_and_logged(agent, harness, fake_llm, two_chats, settings):
    settings.CINDY_XSENDS_PER_HOUR = 2
    you, bob = two_chats
    fake_llm.set_default_reply(tasks())
    for n in range(3):
        fake_llm.reply_with(tasks({"kind": "xsend", "target_channel_id": bob.peer_id, "intent": f"note {n}"}))
        sandbox_say(agent=agent, text=f"tell Bob {n}")
        harness.settle()

    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.XSEND).count() == 2
    assert any("CINDY_XSENDS_PER_HOUR is 2" in r for r in _refusals())


def test_events_beyond_the_hourly_limit_do_not_fire_and_are_logged(
    agent, harness, fake_llm, two_chats, clock, settings
):
    settings.CINDY_EVENTS_PER_HOUR = 1
    you, _ = two_chats
    fake_llm.set_default_reply(tasks())
    zone = ZoneInfo(agent.timezone or "UTC")
    for n in range(2):
        local = (now() + dt.timedelta(minutes=1 + n)).astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S")
        ScheduledEvent.objects.create(
            agent=agent, channel_id=you.peer_id, intent=f"event {n}", time_raw=local, created=now()
        )
    clock.advance(minutes=3)
    harness.step("events")
    harness.settle()

    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.EVENT).count() == 1
    skipped = ActivityEvent.objects.filter(summary__contains="CINDY_EVENTS_PER_HOUR is 1")
    assert skipped.count() == 1 and "did not fire" in skipped.get().summary


def test_an_xsend_turn_shows_the_intent_and_nothing_else_of_the_source_chat(
    agent, harness, fake_llm, two_chats
):
    """The source chat's messages, notes and plans stay there; global memories are the agent's own
    and shown everywhere (without ids outside the chat that made them: docs/llm.md)."""
    you, bob = two_chats
    fake_llm.reply_with(
        tasks(
            {"kind": "note", "content": "You is planning a surprise party"},
            {"kind": "plan", "content": "keep the party secret from Bob"},
            {"kind": "xsend", "target_channel_id": bob.peer_id, "intent": "Ask Bob what he does on Friday"},
        )
    )
    fake_llm.reply_with(tasks({"kind": "send", "text": "Bob, plans for Friday?"}))
    sandbox_say(agent=agent, text="my door code is 4711; I am planning a surprise party for Bob")
    harness.settle()

    assert sandbox_transcript(agent=agent, as_name="Bob")[-1] == "Wendy: Bob, plans for Friday?"
    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "Ask Bob what he does on Friday" in prompt
    for private in ("4711", "surprise party", "keep the party secret"):
        assert private not in prompt, private
