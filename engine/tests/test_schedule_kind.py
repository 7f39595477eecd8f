"""schedule: daily schedule entries by id, `file:schedule.json`, and responsiveness driving replies."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from conversations.models import ActivityEvent, TaskNode
from dashboard.transcript import conversation_transcript
from engine.responsiveness import asleep_until, responsiveness_delay
from engine.tests.cast import teach
from engine.tests.harness import scripted_turn, tasks
from memory.models import ScheduleEntry
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _taught(agent):
    """The agent has the shipped prompt that teaches this kind."""
    return teach(agent, "Task-Schedule")


@pytest.fixture
def scheduled(agent):
    agent.timezone = "UTC"
    agent.daily_schedule = "Keep a daily schedule: work in the bakery by day, sleep at night."
    agent.save(update_fields=["timezone", "daily_schedule"])
    return agent


def _iso(clock, **delta) -> str:
    return (clock.now() + dt.timedelta(**delta)).isoformat()


def _entry(clock, *, entry_id="act-1", start=0, end=2, activity="Baking", responsiveness=60) -> dict:
    return {
        "kind": "schedule",
        "id": entry_id,
        "start_time": _iso(clock, hours=start),
        "end_time": _iso(clock, hours=end),
        "activity_name": activity,
        "description": "Bread and buns",
        "responsiveness": responsiveness,
    }


def test_schedule_entries_are_created_updated_and_deleted_by_id(scheduled, clock, harness, fake_llm):
    scripted_turn(scheduled, harness, fake_llm, _entry(clock, start=1, end=3))
    entry = ScheduleEntry.objects.get()
    assert (entry.entry_id, entry.activity, entry.responsiveness) == ("act-1", "Baking", 60)
    assert entry.end - entry.start == dt.timedelta(hours=2)

    scripted_turn(
        scheduled,
        harness,
        fake_llm,
        {"kind": "schedule", "id": "act-1", "activity_name": "Selling bread", "responsiveness": 80},
    )
    entry.refresh_from_db()
    assert (entry.activity, entry.responsiveness) == ("Selling bread", 80)

    scripted_turn(scheduled, harness, fake_llm, {"kind": "schedule", "id": "act-1", "activity_name": ""})
    assert not ScheduleEntry.objects.exists()


def test_an_overlapping_schedule_entry_is_refused(scheduled, clock, harness, fake_llm):
    scripted_turn(scheduled, harness, fake_llm, _entry(clock, start=1, end=3))
    scripted_turn(
        scheduled, harness, fake_llm, _entry(clock, entry_id="act-2", start=2, end=4, activity="Nap")
    )

    assert list(ScheduleEntry.objects.values_list("entry_id", flat=True)) == ["act-1"]
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert 'overlaps "Baking"' in refusal.summary


def test_an_entry_touching_another_at_its_boundary_is_allowed(scheduled, clock, harness, fake_llm):
    scripted_turn(
        scheduled,
        harness,
        fake_llm,
        _entry(clock, start=1, end=3),
        _entry(clock, entry_id="act-2", start=3, end=4),
    )
    assert ScheduleEntry.objects.count() == 2


def test_a_persona_without_a_daily_schedule_keeps_no_schedule(agent, clock, harness, fake_llm):
    scripted_turn(agent, harness, fake_llm, _entry(clock, start=1, end=3))
    assert not ScheduleEntry.objects.exists()
    assert "keeps no schedule" in ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED).summary


def test_file_schedule_json_shows_the_entries_to_the_model(scheduled, clock, harness, fake_llm):
    scheduled.role_prompt_names = [*scheduled.role_prompt_names, "Task-Retrieve"]
    scheduled.save(update_fields=["role_prompt_names"])
    scripted_turn(scheduled, harness, fake_llm, _entry(clock, start=1, end=3))
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:schedule.json"]}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "I bake at noon"}))
    sandbox_say(agent=scheduled, text="when do you bake?")
    harness.settle(until=clock.now() + dt.timedelta(minutes=3))

    texts = [
        part.get("text", "") for turn in fake_llm.requests[-1].json["contents"] for part in turn["parts"]
    ]
    own = next(text for text in texts if text.startswith("# Your document file:schedule.json"))
    schedule = json.loads(own.split("\n\n", 2)[2])
    assert [a["activity_name"] for a in schedule["activities"]] == ["Baking"]
    assert schedule["activities"][0]["responsiveness"] == 60
    assert "Baking" not in json.dumps(fake_llm.requests[0].json)  # only shown when retrieved
    assert sandbox_transcript(agent=scheduled)[-1] == "Wendy: I bake at noon"


def test_responsiveness_sets_the_reply_delay_from_4_to_120_seconds():
    assert responsiveness_delay(100) == dt.timedelta(seconds=4)
    assert responsiveness_delay(1) == dt.timedelta(seconds=120)
    assert dt.timedelta(seconds=4) < responsiveness_delay(50) < dt.timedelta(seconds=120)


def test_a_message_during_a_slow_activity_is_answered_later(scheduled, clock, harness, fake_llm):
    ScheduleEntry.objects.create(
        agent=scheduled,
        entry_id="a",
        activity="Gardening",
        start=clock.now(),
        end=clock.now() + dt.timedelta(hours=1),
        responsiveness=1,
        created=clock.now(),
    )
    sandbox_say(agent=scheduled, text="hi")
    harness.ingest()
    received = TaskNode.objects.get(kind="received")
    assert received.not_before - clock.now() == pytest.approx(
        dt.timedelta(seconds=120), abs=dt.timedelta(seconds=2)
    )


def test_at_responsiveness_0_the_agent_sleeps_until_wake_time_and_leaves_messages_unread(
    scheduled, clock, harness, fake_llm
):
    wake = clock.now() + dt.timedelta(hours=2)
    ScheduleEntry.objects.create(
        agent=scheduled,
        entry_id="s",
        activity="Sleeping",
        start=clock.now() - dt.timedelta(hours=6),
        end=wake,
        responsiveness=0,
        created=clock.now(),
    )
    assert asleep_until(agent=scheduled, at=clock.now()) == wake
    fake_llm.reply_with(tasks({"kind": "send", "text": "Good morning!"}))
    sandbox_say(agent=scheduled, text="are you up?")
    harness.settle(until=wake - dt.timedelta(minutes=1))

    assert fake_llm.requests == []
    assert sandbox_transcript(agent=scheduled) == ["You: are you up?"]
    assert scheduled.conversations.get().last_read_message_id in (None, 0)

    harness.settle()
    assert sandbox_transcript(agent=scheduled)[-1] == "Wendy: Good morning!"


def test_asleep_lines_still_work_for_personas_without_a_schedule(agent, clock):
    agent.daily_schedule = "Asleep: 00:00-23:59"
    agent.timezone = "UTC"
    agent.save()
    assert asleep_until(agent=agent, at=clock.now()) is not None


def test_the_daily_planning_turn_fills_the_schedule_and_sends_nothing(scheduled, clock, harness, fake_llm):
    scheduled.refresh_from_db()
    assert scheduled.telegram_user_id  # recorded when the gateway connected
    fake_llm.reply_with(
        tasks(
            _entry(clock, entry_id="act-morning", start=1, end=4, activity="Baking"),
            _entry(clock, entry_id="act-night", start=10, end=18, activity="Sleeping", responsiveness=0),
            {"kind": "send", "text": "I planned my day!"},
        )
    )
    assert harness.step("schedules") is True
    harness.settle(until=clock.now() + dt.timedelta(minutes=3))

    assert list(ScheduleEntry.objects.values_list("activity", flat=True)) == ["Baking", "Sleeping"]
    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "# Schedule Planning" in prompt
    assert not SandboxMessage.objects.filter(sender__agent=scheduled).exists()
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert "not allowed in the schedule planning turn" in refusal.summary

    assert harness.step("schedules") is False  # once a day
    clock.advance(hours=24)
    fake_llm.reply_with(tasks())
    assert harness.step("schedules") is True


def test_no_planning_turn_for_a_persona_without_a_daily_schedule(agent, harness):
    assert harness.step("schedules") is False


def test_the_schedules_step_takes_the_held_agents_and_reads_none_of_their_rows(agent, harness, clock):
    """The lease step keeps the held agents current; the step reads no agent row of its own (at
    1,000 agents it read them all and built 1,000 models at every full pass). A schedule the lease
    step brings in counts at the next step."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents.models import Agent

    with CaptureQueriesContext(connection) as queries:
        assert harness.step("schedules") is False
    assert not [q["sql"] for q in queries if 'FROM "agents_agent"' in q["sql"].replace("`", '"')]

    Agent.objects.filter(pk=agent.pk).update(daily_schedule="Keep a daily schedule.")  # an admin edit
    assert harness.step("schedules") is False  # not held yet: the lease step has not read it
    harness.step("leases")
    assert harness.step("schedules") is True


def test_a_planning_turn_without_an_api_key_tries_again_soon_and_its_failure_clears(
    scheduled, clock, harness, fake_llm, settings
):
    from conversations.models import Conversation
    from dashboard.selectors import conversation_row
    from llm.models import LLMCall
    from memory.models import ScheduleRefresh

    scheduled.refresh_from_db()
    key, settings.GOOGLE_GEMINI_API_KEY = settings.GOOGLE_GEMINI_API_KEY, ""
    assert harness.step("schedules") is True
    harness.settle(until=clock.now() + dt.timedelta(minutes=1))
    saved = Conversation.objects.get(agent=scheduled, peer_id=scheduled.telegram_user_id)
    graph = conversation_row(conversation_id=saved.pk)["graph"]
    assert graph["status"] == "failed"
    assert "GOOGLE_GEMINI_API_KEY is not set" in graph["nodes"][0]["error"]
    retry = ActivityEvent.objects.filter(
        summary__startswith="schedule planning failed on configuration"
    ).get()
    assert "tries again in 5 min" in retry.summary

    clock.advance(minutes=5)  # still no key: one more free try, then the wait doubles
    assert harness.step("schedules") is True
    harness.settle(until=clock.now() + dt.timedelta(minutes=1))
    assert fake_llm.requests == [] and not LLMCall.objects.exists()  # no request was spent
    clock.advance(minutes=5)
    assert harness.step("schedules") is False

    settings.GOOGLE_GEMINI_API_KEY = key  # the operator adds the key
    clock.advance(minutes=5)
    fake_llm.reply_with(tasks(_entry(clock, start=1, end=3)))
    assert harness.step("schedules") is True
    harness.settle(until=clock.now() + dt.timedelta(minutes=3))
    assert list(ScheduleEntry.objects.values_list("activity", flat=True)) == ["Baking"]
    graph = conversation_row(conversation_id=saved.pk)["graph"]
    assert graph["status"] == "done"
    assert all(not node["error"] for node in graph["nodes"])
    due = ScheduleRefresh.objects.get(agent=scheduled).due_at
    assert due - clock.now() > dt.timedelta(hours=23)  # back to once a day


def test_in_the_planning_turn_user_means_the_people_who_write_to_the_agent(
    scheduled, clock, harness, fake_llm
):
    scheduled.instructions = "You are a baker who helps {user} find good bread. Greet {user_name} warmly."
    scheduled.save(update_fields=["instructions"])
    fake_llm.reply_with(tasks())
    assert harness.step("schedules") is True
    harness.settle(until=clock.now() + dt.timedelta(minutes=3))

    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "# Schedule Planning" in prompt
    assert "a baker who helps the people who write to you find good bread" in prompt
    assert "Greet the people who write to you warmly." in prompt
    assert "helps Saved Messages" not in prompt


def test_in_a_conversation_user_is_the_partners_name(agent, clock, harness, fake_llm):
    agent.instructions = "You are a baker who helps {user} find good bread."
    agent.save(update_fields=["instructions"])
    fake_llm.reply_with(tasks({"kind": "send", "text": "Rye today."}))
    sandbox_say(agent=agent, text="what's fresh?", as_name="Ada")
    harness.settle()

    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "a baker who helps Ada find good bread" in prompt


def test_the_planning_turns_activity_line_counts_the_entries_it_stored(scheduled, clock, harness, fake_llm):
    # The turn plans no action of its own: its line says so, and what it stored, counted per kind.
    entries = [
        _entry(clock, entry_id=f"act-{hour}", start=hour, end=hour + 1, activity=f"Hour {hour}")
        for hour in range(1, 22)
    ]
    fake_llm.reply_with(tasks(*entries))
    assert harness.step("schedules") is True
    harness.settle(until=clock.now() + dt.timedelta(minutes=3))

    assert ScheduleEntry.objects.count() == 21
    [line] = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.NODE_DONE, summary__startswith="received #")
    assert ": planned no actions; stored 21 schedule entries (answered by " in line.summary, line.summary
    assert len(line.data["stored"]) == 21  # each entry by its id stays in the event's data
    # The conversation's task log says the same.
    [turn] = [e for e in conversation_transcript(line.conversation) if e.get("node_id") == line.node_id]
    assert ("planned", "no actions; stored 21 schedule entries") in turn["lines"]
