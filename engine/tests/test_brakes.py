"""Spend brakes: daily caps and per-partner turn limits stop planning without an LLM call."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from agents.services import curation
from conversations.models import ActivityEvent
from engine.brakes import braked_turns_release, day_start, spend_alerts
from engine.tests.harness import tasks
from llm.models import LLMCall
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db
#: 100,000 input tokens of gemini-3-flash ($0.50 per million): $0.05 a turn.
EXPENSIVE = {"input_tokens": 100_000, "output_tokens": 0}


def brake_lines(agent) -> list[str]:
    return list(
        ActivityEvent.objects.filter(agent=agent, data__brake__isnull=False)
        .order_by("id")
        .values_list("summary", flat=True)
    )


def say(agent, harness, clock, text: str, *, minutes: int = 5) -> None:
    sandbox_say(agent=agent, text=text)
    harness.settle(until=clock.now() + dt.timedelta(minutes=minutes))


def test_an_agent_at_its_daily_cap_stops_planning_says_so_once_and_resumes_when_it_is_raised(
    agent, harness, fake_llm, clock
):
    agent.daily_spend_cap = Decimal("0.04")
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}), **EXPENSIVE)
    fake_llm.reply_with(tasks({"kind": "send", "text": "Sorry, I was away."}))
    say(agent, harness, clock, "hello")
    assert len(fake_llm.requests) == 1 and LLMCall.objects.get().cost == Decimal("0.05")

    say(agent, harness, clock, "are you there?")
    say(agent, harness, clock, "hello??")
    assert len(fake_llm.requests) == 1  # no LLM call after the cap
    assert sandbox_transcript(agent=agent) == [
        "You: hello",
        "Wendy: Hi!",
        "You: are you there?",
        "You: hello??",
    ]
    assert brake_lines(agent) == [
        "spend cap reached: Wendy spent $0.05 of its daily $0.04; planning resumes tomorrow or when the "
        "cap is raised (admin: Daily spend cap)"
    ]
    assert spend_alerts() == [
        "spend cap reached: Wendy spent $0.05 of its daily $0.04: it does not plan until tomorrow or until "
        "the cap is raised"
    ]

    agent.daily_spend_cap = Decimal("1.00")
    agent.save()
    harness.settle(until=clock.now() + dt.timedelta(minutes=2))
    assert len(fake_llm.requests) == 2
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Sorry, I was away."
    assert len(brake_lines(agent)) == 1 and spend_alerts() == []


def test_a_cap_below_a_cent_is_kept_and_named_as_it_is_in_the_activity_line(agent, harness, fake_llm, clock):
    agent.daily_spend_cap = Decimal("0.0042")
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}), **EXPENSIVE)
    say(agent, harness, clock, "hello")
    say(agent, harness, clock, "are you there?")

    assert len(fake_llm.requests) == 1
    assert brake_lines(agent) == [
        "spend cap reached: Wendy spent $0.05 of its daily $0.0042; planning resumes tomorrow or when the "
        "cap is raised (admin: Daily spend cap)"
    ]
    assert spend_alerts() == [
        "spend cap reached: Wendy spent $0.05 of its daily $0.0042: it does not plan until tomorrow or until "
        "the cap is raised"
    ]


def test_a_capped_agent_plans_again_the_next_day(agent, harness, fake_llm, clock):
    agent.daily_spend_cap = Decimal("0.05")
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}), **EXPENSIVE)
    fake_llm.reply_with(tasks({"kind": "send", "text": "Good morning!"}), **EXPENSIVE)
    say(agent, harness, clock, "hello")
    say(agent, harness, clock, "still up?")
    assert len(fake_llm.requests) == 1
    clock.set(day_start(clock.now()) + dt.timedelta(days=1, seconds=1))
    harness.settle(until=clock.now() + dt.timedelta(minutes=2))
    assert len(fake_llm.requests) == 2 and sandbox_transcript(agent=agent)[-1] == "Wendy: Good morning!"


def test_the_installation_cap_stops_every_agent(agent, other_agent, harness, fake_llm, clock, settings):
    settings.CINDY_DAILY_SPEND_CAP_USD = Decimal("0.05")
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}), **EXPENSIVE)
    say(agent, harness, clock, "hello")
    say(agent, harness, clock, "again")
    assert len(fake_llm.requests) == 1
    assert brake_lines(agent) == [
        "spend cap reached: the installation spent $0.05 of its $0.05 today (CINDY_DAILY_SPEND_CAP_USD); "
        "planning resumes tomorrow or when the cap is raised"
    ]
    assert spend_alerts()[0].startswith("spend cap reached: the installation spent $0.05 of its $0.05 today")


def test_turns_per_partner_per_minute_wait_for_the_minute_to_pass(agent, harness, fake_llm, clock):
    agent.partner_turns_per_minute = 1
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "one"}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "two"}))
    say(agent, harness, clock, "first", minutes=0)
    harness.settle(until=clock.now() + dt.timedelta(seconds=20))
    say(agent, harness, clock, "second", minutes=0)
    harness.settle(until=clock.now() + dt.timedelta(seconds=20))
    assert len(fake_llm.requests) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=2))
    first, second = LLMCall.objects.order_by("created").values_list("created", flat=True)
    assert len(fake_llm.requests) == 2 and (second - first).total_seconds() >= 60
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: two"
    assert len(brake_lines(agent)) == 1 and brake_lines(agent)[0].startswith("turn limit reached: 1 planning")


def test_turns_per_partner_per_day_hold_further_turns(agent, harness, fake_llm, clock):
    agent.partner_turns_per_day = 1
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "one"}))
    say(agent, harness, clock, "first")
    say(agent, harness, clock, "second")
    assert len(fake_llm.requests) == 1
    assert brake_lines(agent) == [
        "turn limit reached: 1 planning turns in this conversation today; the next waits for tomorrow or a "
        "higher limit (admin: Partner turns per day)"
    ]


def test_raising_the_cap_in_the_admin_plans_the_held_turn_at_once(agent, harness, fake_llm, clock):
    """An operator who raises the cap sees the held turn planned now, not at the brake's next check."""
    agent.daily_spend_cap = Decimal("0.04")
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}), **EXPENSIVE)
    fake_llm.reply_with(tasks({"kind": "send", "text": "Sorry, I was away."}))
    say(agent, harness, clock, "hello")
    sandbox_say(agent=agent, text="are you there?")
    harness.settle(until=clock.now() + dt.timedelta(seconds=5))
    assert len(fake_llm.requests) == 1 and len(brake_lines(agent)) == 1

    held_at = clock.now()
    agent.daily_spend_cap = Decimal("1.00")
    curation.agent_save(agent=agent)  # what the admin's save runs
    harness.settle(until=held_at)  # the clock does not move: no brake check comes due by itself
    assert len(fake_llm.requests) == 2
    harness.settle(until=held_at + dt.timedelta(minutes=1))  # typing the answer
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Sorry, I was away."


def test_saving_an_agent_without_changing_its_limits_leaves_held_turns_held(agent, harness, fake_llm, clock):
    agent.partner_turns_per_day = 1
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "one"}))
    say(agent, harness, clock, "first")
    sandbox_say(agent=agent, text="second")
    harness.settle(until=clock.now() + dt.timedelta(seconds=5))
    agent.daily_schedule = "Edited by an operator."
    curation.agent_save(agent=agent)
    harness.settle(until=clock.now())
    assert len(fake_llm.requests) == 1
    assert braked_turns_release(agent_id=agent.pk) == 1  # the turn is still held, by the same brake
