"""event: scheduled intents that fire as turns, once, by a compare-and-set claim."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from asgiref.sync import async_to_sync

from conversations.models import ActivityEvent, Conversation, TaskGraph
from engine.events import event_claim, event_fire, event_next_due_at, events_fire_due
from engine.tests.cast import teach
from engine.tests.harness import scripted_turn, tasks
from memory.models import ScheduledEvent
from sandbox.services.chats import sandbox_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _taught(agent):
    """The agent has the shipped prompt that teaches this kind."""
    return teach(agent, "Task-Event")


def _local(clock, agent, **delta) -> str:
    """A naive local time in the agent's zone, `delta` from now."""
    from zoneinfo import ZoneInfo

    return (
        (clock.now() + dt.timedelta(**delta))
        .astimezone(ZoneInfo(agent.timezone))
        .strftime("%Y-%m-%dT%H:%M:%S")
    )


@pytest.fixture
def paris(agent):
    agent.timezone = "Europe/Paris"
    agent.save(update_fields=["timezone"])
    return agent


def test_an_event_is_stored_in_the_agents_timezone_and_fires_once_as_ascripted_turn(
    paris, clock, harness, fake_llm
):
    when = _local(clock, paris, hours=2)
    scripted_turn(
        paris, harness, fake_llm, {"kind": "event", "intent": "Ask how the exam went", "time": when}
    )
    event = ScheduledEvent.objects.get()
    expected = dt.datetime.fromisoformat(when).replace(tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert event.due_at == expected.astimezone(dt.UTC)  # Paris is UTC+1 in November

    fake_llm.reply_with(tasks({"kind": "send", "text": "How did the exam go?"}))
    clock.set(event.due_at)
    harness.step("events")
    harness.settle()

    assert sandbox_transcript(agent=paris)[-1] == "Wendy: How did the exam go?"
    graph = TaskGraph.objects.filter(trigger=TaskGraph.Trigger.EVENT).get()
    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert prompt.count("Ask how the exam went") == 1
    assert "# Scheduled Event" in prompt
    assert not ScheduledEvent.objects.exists()  # a one-off event is spent
    assert graph.context["event"]["id"] == event.entry_id
    assert harness.step("events") is False


def test_the_events_timezone_wins_over_the_agents_and_any_offset(paris, clock, harness, fake_llm):
    tomorrow = (clock.now() + dt.timedelta(days=1)).date().isoformat()
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "x", "time": f"{tomorrow}T09:30:00Z", "timezone": "America/Los_Angeles"},
    )
    event = ScheduledEvent.objects.get()
    assert event.due_at == dt.datetime.fromisoformat(f"{tomorrow}T17:30:00+00:00")  # 09:30 PST


def test_an_event_is_updated_by_id_and_deleted_by_an_empty_intent(paris, clock, harness, fake_llm):
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "id": "e1", "intent": "one", "time": _local(clock, paris, hours=1)},
    )
    later = _local(clock, paris, hours=3)
    scripted_turn(paris, harness, fake_llm, {"kind": "event", "id": "e1", "intent": "two", "time": later})
    event = ScheduledEvent.objects.get()
    assert (event.entry_id, event.intent, event.time_raw) == ("e1", "two", later)

    scripted_turn(paris, harness, fake_llm, {"kind": "event", "id": "e1", "intent": ""})
    assert not ScheduledEvent.objects.exists()


def test_an_event_in_the_past_is_refused(paris, clock, harness, fake_llm):
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "too late", "time": _local(clock, paris, hours=-1)},
    )

    assert not ScheduledEvent.objects.exists()
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert "is in the past" in refusal.summary


def test_an_event_with_an_unreadable_time_or_interval_is_refused(paris, clock, harness, fake_llm):
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "a", "time": "next tuesday"},
        {"kind": "event", "intent": "b", "time": _local(clock, paris, hours=1), "interval": "often"},
    )
    assert not ScheduledEvent.objects.exists()
    reasons = list(
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED).values_list("summary", flat=True)
    )
    assert any("ISO 8601" in r for r in reasons) and any('"interval"' in r for r in reasons)


def test_a_recurring_event_fires_its_occurrences_and_skips_steps_missed_in_a_clock_jump(
    paris, clock, harness, fake_llm
):
    fake_llm.set_default_reply(tasks())
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {
            "kind": "event",
            "intent": "stretch",
            "time": _local(clock, paris, hours=1),
            "interval": "1 hours",
            "occurrences": 3,
        },
    )
    event = ScheduledEvent.objects.get()
    first = event.due_at
    clock.set(first)
    assert events_fire_due(agent_ids=[paris.pk]) == 1
    event.refresh_from_db()
    assert event.due_at == first + dt.timedelta(hours=1)

    clock.set(first + dt.timedelta(hours=5, minutes=10))  # the gateway was down; the clock jumped
    assert events_fire_due(agent_ids=[paris.pk]) == 1
    event.refresh_from_db()
    assert event.fired_count == 2
    assert event.due_at == first + dt.timedelta(hours=6)
    assert events_fire_due(agent_ids=[paris.pk]) == 0

    clock.set(event.due_at)
    assert events_fire_due(agent_ids=[paris.pk]) == 1
    assert not ScheduledEvent.objects.exists()
    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.EVENT).count() == 3


def test_a_claim_lost_to_another_gateway_fires_nothing(paris, clock, harness, fake_llm):
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "once", "time": _local(clock, paris, minutes=30)},
    )
    seen_by_this_gateway = ScheduledEvent.objects.get()
    seen_by_the_other = ScheduledEvent.objects.get()
    clock.set(seen_by_this_gateway.due_at)

    assert event_claim(event=seen_by_the_other, at=clock.now()) is True
    assert event_claim(event=seen_by_this_gateway, at=clock.now()) is False
    assert event_fire(event_pk=seen_by_this_gateway.pk, at=clock.now()) is False


def test_a_clock_set_back_does_not_fire_an_event_again(paris, clock, harness, fake_llm):
    fake_llm.set_default_reply(tasks())
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "once", "time": _local(clock, paris, minutes=30)},
    )
    event = ScheduledEvent.objects.get()
    clock.set(event.due_at + dt.timedelta(minutes=1))
    assert events_fire_due(agent_ids=[paris.pk]) == 1
    clock.set(event.due_at - dt.timedelta(minutes=10))
    clock.set(event.due_at + dt.timedelta(minutes=1))
    assert events_fire_due(agent_ids=[paris.pk]) == 0


def test_a_due_event_of_a_muted_chat_is_spent_without_a_scripted_turn(paris, clock, harness, fake_llm):
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "ping", "time": _local(clock, paris, minutes=30)},
    )
    Conversation.objects.filter(agent=paris).update(muted=True)
    event = ScheduledEvent.objects.get()
    clock.set(event.due_at)

    assert events_fire_due(agent_ids=[paris.pk]) == 1
    assert not TaskGraph.objects.filter(trigger=TaskGraph.Trigger.EVENT).exists()
    assert ActivityEvent.objects.filter(summary__contains="did not fire: chat muted").exists()


def test_the_gateway_sleeps_no_longer_than_until_the_next_event(paris, clock, harness, fake_llm):
    scripted_turn(
        paris,
        harness,
        fake_llm,
        {"kind": "event", "intent": "soon", "time": _local(clock, paris, minutes=30)},
    )
    event = ScheduledEvent.objects.get()
    assert event_next_due_at(agent_ids=[paris.pk]) == event.due_at
    harness.gateway.context.tick_seconds = 3600
    clock.set(event.due_at - dt.timedelta(seconds=12))
    assert async_to_sync(harness.gateway.idle.idle_seconds)() == pytest.approx(12)
