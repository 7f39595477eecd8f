"""Online presence: no start-typing delay in a fast exchange, and the account's status follows the
agent's activity and schedule (engine/presence.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import ActivityEvent, TaskNode
from engine.handlers.send import DEFAULT_START_TYPING_DELAY
from engine.presence import agents_due_online
from engine.tests.harness import tasks
from memory.models import ScheduleEntry
from sandbox.models import SandboxUser
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def _turn(agent, harness, fake_llm, text: str) -> dict:
    fake_llm.reply_with(tasks({"kind": "send", "text": f"re: {text}"}))
    sandbox_say(agent=agent, text=text, as_name="Ann")
    harness.settle()
    return TaskNode.objects.filter(kind="send").order_by("-id").first().params


def _shown_online(agent) -> bool:
    return SandboxUser.objects.get(agent=agent).online


def test_a_quick_second_message_is_answered_without_the_start_typing_delay(agent, harness, fake_llm, clock):
    agent.start_typing_delay = None
    agent.save()
    first = _turn(agent, harness, fake_llm, "hi")
    assert first["start_delay"] == DEFAULT_START_TYPING_DELAY

    clock.advance(60)
    second = _turn(agent, harness, fake_llm, "how are you?")
    assert second["start_delay"] == 0
    deferred = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.NODE_DEFERRED)
    assert deferred.filter(summary__contains="already online: no start-typing delay").count() == 1


def test_after_the_online_window_the_start_typing_delay_is_paid_again(
    agent, harness, fake_llm, clock, settings
):
    settings.CINDY_ONLINE_WINDOW_SECONDS = 120
    agent.start_typing_delay = 5
    agent.save()
    _turn(agent, harness, fake_llm, "hi")
    clock.advance(121)
    later = _turn(agent, harness, fake_llm, "still there?")
    assert later["start_delay"] == 5


def test_every_send_of_a_fresh_turn_is_typed_with_the_start_delay(agent, harness, fake_llm):
    agent.start_typing_delay = None
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "one"}, {"kind": "send", "text": "two"}))
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    delays = [n.params["start_delay"] for n in TaskNode.objects.filter(kind="send").order_by("id")]
    # What the agent sends in this turn does not make it "already online" for the rest of the turn.
    assert delays == [DEFAULT_START_TYPING_DELAY, DEFAULT_START_TYPING_DELAY]


def test_the_account_shows_online_while_active_and_offline_after_the_window(
    agent, harness, fake_llm, clock, settings
):
    settings.CINDY_ONLINE_WINDOW_SECONDS = 120
    harness.step("presence")
    assert not _shown_online(agent)  # nothing written yet

    _turn(agent, harness, fake_llm, "hi")
    clock.advance(10)
    harness.step("presence")
    assert _shown_online(agent)

    clock.advance(121)
    harness.step("presence")
    assert not _shown_online(agent)
    lines = list(
        ActivityEvent.objects.filter(agent=agent, summary__startswith="shown ")
        .order_by("id")
        .values_list("summary", flat=True)
    )
    assert lines == [
        "shown offline on Telegram (nothing written for 2 min)",
        "shown online on Telegram (wrote within the last 2 min)",
        "shown offline on Telegram (nothing written for 2 min)",
    ]


def test_an_unchanged_status_is_not_set_again(agent, harness, clock):
    harness.step("presence")
    clock.advance(60)
    harness.step("presence")
    assert ActivityEvent.objects.filter(agent=agent, summary__startswith="shown ").count() == 1


def test_an_asleep_agent_is_offline_even_right_after_writing(agent, harness, fake_llm, clock):
    _turn(agent, harness, fake_llm, "hi")
    at = clock.now()
    assert agents_due_online(agents=[agent], at=at)[agent.pk] == (True, "wrote within the last 5 min")
    ScheduleEntry.objects.create(
        agent=agent,
        entry_id="night",
        activity="Sleeping",
        start=at - dt.timedelta(minutes=1),
        end=at + dt.timedelta(hours=8),
        responsiveness=0,
        created=at,
    )
    assert agents_due_online(agents=[agent], at=at)[agent.pk] == (False, "asleep")
    clock.advance(10)
    harness.step("presence")
    assert not _shown_online(agent)
