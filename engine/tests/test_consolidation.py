"""Consolidation while the agent rests: a quiet chat's new messages reviewed into notes and memories."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from agents.models import Agent
from conversations.models import ActivityEvent, Conversation, Message, TaskGraph, TaskNode
from dashboard.transcript import trigger_text
from engine.consolidation import consolidations_start_due
from engine.tests.cast import teach
from engine.tests.harness import Harness, stored_entries_text, tasks
from llm.kinds import Task
from llm.models import LLMCall
from llm.policy import refusal_reason
from llm.policy_inputs import TurnInputs
from memory.models import Memory, Note, ScheduleEntry
from sandbox.models import SandboxMember
from sandbox.services.chats import sandbox_group, sandbox_person, sandbox_say, sandbox_user_for_agent

pytestmark = pytest.mark.django_db

QUIET = 7200
ASLEEP_QUIET = 300
CONSOLIDATE = TaskGraph.Trigger.CONSOLIDATE


@pytest.fixture
def harness(agent, clock, fake_llm, settings):
    settings.CINDY_CONSOLIDATE_QUIET_SECONDS = QUIET
    settings.CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS = ASLEEP_QUIET
    settings.CINDY_CONSOLIDATE_PER_DAY = 4
    clock.set(dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC))
    teach(agent, "Task-Memory", "Task-Consolidate")
    h = Harness(clock)
    h.start()
    return h


def _chat(agent, harness, fake_llm, text: str = "I'm moving to Leeds in May.", **who) -> Conversation:
    """A person writes; the agent answers; the engine settles."""
    fake_llm.reply_with(tasks({"kind": "send", "text": "Oh, exciting!"}))
    sandbox_say(agent=agent, text=text, **who)
    harness.settle(until=harness.clock.now() + dt.timedelta(minutes=5))
    return Message.objects.filter(is_agent=False).latest("id").conversation


def _start(agent, clock) -> int:
    return consolidations_start_due(agents=[Agent.objects.get(pk=agent.pk)], at=clock.now())


def _request_text(request) -> str:
    system = "".join(part["text"] for part in request.json["systemInstruction"]["parts"])
    turns = [part.get("text", "") for content in request.json["contents"] for part in content["parts"]]
    return "\n".join([system, *turns])


def _consolidations() -> list[TaskGraph]:
    return list(TaskGraph.objects.filter(trigger=CONSOLIDATE).order_by("id"))


def test_a_chat_quiet_for_the_set_time_gets_a_consolidation_turn_that_writes_a_note(
    agent, harness, clock, fake_llm
):
    conversation = _chat(agent, harness, fake_llm)
    clock.advance(seconds=QUIET - 60)
    assert _start(agent, clock) == 0, "not quiet long enough yet"

    clock.advance(seconds=120)
    fake_llm.reply_with(tasks({"kind": "note", "content": "Moving to Leeds in May."}))
    assert harness.step("consolidation") is True  # the gateway's own step starts it
    [graph] = _consolidations()
    assert graph.conversation_id == conversation.pk
    newest = Message.objects.filter(conversation=conversation).order_by("-message_id")[0].message_id
    assert graph.context["consolidate"]["last"] == newest
    assert graph.context["consolidate"]["count"] == 2
    assert trigger_text(graph) == f"Consolidation while quiet: messages #1 to #{newest} (2)"
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))

    graph.refresh_from_db()
    assert graph.status == TaskGraph.Status.DONE
    prompt = _request_text(fake_llm.requests[-1])
    assert "# Consolidation" in prompt and "nobody will read what you send" in prompt
    assert "I'm moving to Leeds in May." in prompt
    assert Note.objects.get().content == "Moving to Leeds in May."
    # Costed as any turn: its call is an LLMCall row of the consolidation's node.
    call = LLMCall.objects.latest("id")
    assert TaskNode.objects.get(pk=call.node_id).graph_id == graph.pk
    assert call.purpose == LLMCall.Purpose.PLAN and call.cost > 0
    # In the activity stream: the start, and what the turn stored.
    lines = list(
        ActivityEvent.objects.filter(conversation=conversation)
        .order_by("id")
        .values_list("summary", flat=True)
    )
    assert any(line.startswith("consolidation started: 2 new message(s)") for line in lines), lines
    assert any(re.search(r"planned no actions; stored note note-\w+ created", line) for line in lines), lines
    assert Message.objects.filter(conversation=conversation, is_agent=True).count() == 1, "it sent nothing"

    # The note is in the next turn's prompt.
    _chat(agent, harness, fake_llm, text="Any tips for Leeds?")
    assert "Moving to Leeds in May." in stored_entries_text(fake_llm.requests[-1])


def test_a_quiet_time_lowered_at_run_time_is_looked_at_from_the_next_pass(
    agent, harness, clock, fake_llm, settings
):
    _chat(agent, harness, fake_llm)
    assert harness.step("consolidation") is False  # quiet for minutes, not two hours: next look in 60 s
    settings.CINDY_CONSOLIDATE_QUIET_SECONDS = 2  # what an operator's override in the admin reads as
    clock.advance(seconds=3)
    fake_llm.reply_with(tasks({"kind": "note", "content": "Moving to Leeds in May."}))
    assert harness.step("consolidation") is True, "the lowered quiet time waited out the old interval"
    assert len(_consolidations()) == 1


def test_no_consolidation_without_new_messages_since_the_last_one(agent, harness, clock, fake_llm):
    _chat(agent, harness, fake_llm)
    clock.advance(seconds=QUIET + 1)
    fake_llm.reply_with(tasks())
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))

    clock.advance(hours=3)
    assert _start(agent, clock) == 0
    assert len(_consolidations()) == 1

    _chat(agent, harness, fake_llm, text="Back again.")
    clock.advance(seconds=QUIET + 1)
    fake_llm.reply_with(tasks())
    assert _start(agent, clock) == 1
    second = _consolidations()[-1].context["consolidate"]
    assert second["count"] == 2 and second["first"] > _consolidations()[0].context["consolidate"]["last"]


def test_a_chat_with_a_turn_under_way_is_not_consolidated(agent, harness, clock, fake_llm):
    _chat(agent, harness, fake_llm)
    clock.advance(seconds=QUIET + 1)
    sandbox_say(agent=agent, text="late one")
    harness.ingest()  # the message starts a turn; its received node waits
    Conversation.objects.update(last_message_at=clock.now() - dt.timedelta(seconds=QUIET + 1))
    assert _start(agent, clock) == 0
    assert _consolidations() == []


def test_the_daily_limit_holds_and_is_said_once_until_the_next_day(agent, harness, clock, fake_llm, settings):
    settings.CINDY_CONSOLIDATE_PER_DAY = 1
    _chat(agent, harness, fake_llm, as_name="Ann", user_id=9001)
    _chat(agent, harness, fake_llm, as_name="Bob", user_id=9002)
    clock.advance(seconds=QUIET + 1)
    fake_llm.reply_with(tasks())
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    assert _start(agent, clock) == 0
    assert _start(agent, clock) == 0
    capped = ActivityEvent.objects.filter(summary__startswith="consolidation skipped")
    assert capped.count() == 1
    assert "CINDY_CONSOLIDATE_PER_DAY allows 1 a day" in capped.get().summary
    [first] = _consolidations()

    clock.set(dt.datetime(2026, 3, 3, 9, 0, tzinfo=dt.UTC))  # the next day
    fake_llm.reply_with(tasks())
    assert _start(agent, clock) == 1
    second = _consolidations()[-1]
    assert second.conversation_id != first.conversation_id


def test_an_agent_whose_prompts_lack_task_consolidate_has_none(agent, harness, clock, fake_llm):
    agent.role_prompt_names = ["Task-Memory"]
    agent.save(update_fields=["role_prompt_names"])
    _chat(agent, harness, fake_llm)
    clock.advance(seconds=QUIET + 1)
    assert _start(agent, clock) == 0


def test_sends_are_refused_and_curated_memories_untouched_in_a_consolidation_turn(
    agent, harness, clock, fake_llm
):
    conversation = _chat(agent, harness, fake_llm)
    curated = Memory.objects.create(
        agent=agent,
        kind=Memory.Kind.CURATED,
        partner_id=conversation.peer_id,
        entry_id="memory-curated01",
        content="Prefers to be called Sam.",
    )
    clock.advance(seconds=QUIET + 1)
    fake_llm.reply_with(
        tasks(
            {"kind": "send", "text": "Still there?"},
            {"kind": "remember", "id": "memory-curated01", "content": "Prefers to be called Samuel."},
            {"kind": "remember", "content": "Moving to Leeds in May."},
        )
    )
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))

    prompt = _request_text(fake_llm.requests[-1])
    # Shown as every curated memory is, without its id; a remember naming it anyway is refused.
    assert "Prefers to be called Sam." in prompt and "memory-curated01" not in prompt
    curated.refresh_from_db()
    assert curated.content == "Prefers to be called Sam."
    assert list(Memory.objects.filter(kind=Memory.Kind.EPISODIC).values_list("content", flat=True)) == [
        "Moving to Leeds in May."
    ]
    assert Message.objects.filter(conversation=conversation, is_agent=True).count() == 1
    refused = list(
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED)
        .order_by("id")
        .values_list("summary", flat=True)
    )
    assert len(refused) == 2, refused
    assert "send is not allowed in a consolidation turn" in refused[0]
    assert "names a curated memory" in refused[1]
    assert _consolidations()[0].status == TaskGraph.Status.DONE


def test_a_consolidation_turn_merges_a_duplicate_by_id(agent, harness, clock, fake_llm):
    fake_llm.reply_with(
        tasks(
            {"kind": "send", "text": "Noted!"},
            {"kind": "note", "id": "note-a", "content": "Moving in May."},
            {"kind": "note", "id": "note-b", "content": "Moves to Leeds in May."},
        )
    )
    sandbox_say(agent=agent, text="I'm moving to Leeds in May.")
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    clock.advance(seconds=QUIET + 1)
    fake_llm.reply_with(
        tasks(
            {"kind": "note", "id": "note-a", "content": "Moving to Leeds in May."},
            {"kind": "note", "id": "note-b", "content": ""},
        )
    )
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    prompt = _request_text(fake_llm.requests[-1])
    assert '"id": "note-a"' in prompt and '"id": "note-b"' in prompt
    assert list(Note.objects.values_list("entry_id", "content")) == [("note-a", "Moving to Leeds in May.")]
    assert json.loads(json.dumps(_consolidations()[0].context))["consolidate"]["count"] == 2


@pytest.mark.parametrize(
    ("kind", "params", "allowed"),
    [
        ("note", {"content": "x"}, True),
        ("remember", {"content": "x"}, True),
        ("plan", {"content": "x"}, True),
        ("intend", {"content": "x"}, True),
        ("send", {"text": "x"}, False),
        ("react", {"emoji": "👍", "message_id": 1}, False),
        ("summarize", {"content": "x"}, False),
        ("event", {"intent": "x", "time": "2030-01-01T09:00:00+00:00"}, False),
        ("schedule", {"content": "x"}, False),
        ("xsend", {"target_channel_id": 5, "intent": "x"}, False),
        ("block", {}, False),
    ],
)
def test_a_consolidation_turn_may_only_write_notes_memories_plans_and_intentions(
    agent, kind, params, allowed
):
    conversation = Conversation.objects.create(agent=agent, peer_id=4242, kind=Conversation.Kind.DM)
    inputs = TurnInputs(conversation=conversation, trigger=CONSOLIDATE)
    reason = refusal_reason(Task(kind=kind, params=params), inputs=inputs)
    assert (reason == "") is allowed, reason
    if not allowed:
        assert reason.startswith(f"{kind} is not allowed in a consolidation turn")


def _asleep(agent, clock, *, hours: int = 8) -> ScheduleEntry:
    """The agent's schedule says it sleeps from a minute ago for `hours`."""
    at = clock.now()
    return ScheduleEntry.objects.create(
        agent=agent,
        entry_id="night",
        activity="Sleeping",
        start=at - dt.timedelta(minutes=1),
        end=at + dt.timedelta(hours=hours),
        responsiveness=0,
        created=at,
    )


def test_while_the_agent_sleeps_a_chat_with_new_messages_is_consolidated_at_once(
    agent, harness, clock, fake_llm
):
    conversation = _chat(agent, harness, fake_llm)
    clock.advance(minutes=2)
    night = _asleep(agent, clock)
    assert _start(agent, clock) == 0, "asleep, but not quiet for CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS yet"
    night.delete()
    clock.advance(minutes=8)
    assert _start(agent, clock) == 0, "awake: not quiet for CINDY_CONSOLIDATE_QUIET_SECONDS yet"

    night = _asleep(agent, clock)
    fake_llm.reply_with(tasks({"kind": "note", "content": "Moving to Leeds in May."}))
    assert harness.step("consolidation") is True
    [graph] = _consolidations()
    assert graph.conversation_id == conversation.pk
    assert graph.context["consolidate"]["asleep"] is True and graph.context["consolidate"]["count"] == 2
    started = ActivityEvent.objects.filter(summary__startswith="consolidation started").get().summary
    assert "quiet for 10 min while asleep; 1 of 4 today" in started

    # The turn runs while the agent sleeps (its wake-up is 8 hours away).
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    graph.refresh_from_db()
    assert graph.status == TaskGraph.Status.DONE
    assert Note.objects.get().content == "Moving to Leeds in May."
    assert clock.now() < night.end

    # A message said meanwhile waits for the wake-up, and its chat is not consolidated before that.
    requests = len(fake_llm.requests)
    sandbox_say(agent=agent, text="Are you up?")
    harness.settle(until=clock.now() + dt.timedelta(minutes=30))
    assert len(fake_llm.requests) == requests, "no turn while asleep but the consolidation"
    assert _start(agent, clock) == 0
    fake_llm.reply_with(tasks({"kind": "send", "text": "Morning!"}))
    harness.settle(until=night.end + dt.timedelta(minutes=5))
    assert Message.objects.filter(is_agent=True).latest("id").text == "Morning!"
    assert len(_consolidations()) == 1


def test_the_daily_limit_holds_while_the_agent_sleeps(agent, harness, clock, fake_llm, settings):
    settings.CINDY_CONSOLIDATE_PER_DAY = 1
    _chat(agent, harness, fake_llm, as_name="Ada")
    _chat(agent, harness, fake_llm, text="I got the job!", as_name="Ben")
    clock.advance(minutes=10)
    _asleep(agent, clock)
    fake_llm.reply_with(tasks())
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    assert _start(agent, clock) == 0
    assert len(_consolidations()) == 1
    assert ActivityEvent.objects.filter(summary__startswith="consolidation skipped").count() == 1


def test_a_sleeping_agent_runs_its_consolidation_turns_only(agent, harness, clock, fake_llm):
    """The tick leaves a sleeping agent's reply turns for its wake-up but runs its consolidation."""
    quiet = _chat(agent, harness, fake_llm, as_name="Ada")
    clock.advance(minutes=10)
    night = _asleep(agent, clock)
    sandbox_say(agent=agent, text="Still there?", as_name="Ben")
    harness.ingest()
    waiting = TaskGraph.objects.exclude(conversation=quiet).get(status=TaskGraph.Status.ACTIVE)
    fake_llm.reply_with(tasks({"kind": "note", "content": "Ada moves to Leeds."}))
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    assert _consolidations()[0].status == TaskGraph.Status.DONE
    waiting.refresh_from_db()
    assert waiting.status == TaskGraph.Status.ACTIVE
    assert not waiting.nodes.exclude(status="pending").exists(), "Ben's reply waits for the wake-up"
    assert clock.now() < night.end


def test_a_consolidation_turn_leaves_the_groups_chatter_unread_and_a_reply_turn_reads_it(
    agent, harness, clock, fake_llm
):
    """A person who looks back on a chat (or sleeps) reads nothing new: the consolidation turn's chat is
    synced but not marked read, on the sandbox or in the mirror; the next reply turn reads it as usual."""
    me = sandbox_user_for_agent(agent=agent)
    sandbox_group(title="Allotment", members=[me, sandbox_person(name="Ann"), sandbox_person(name="Ben")])
    _chat(
        agent, harness, fake_llm, text=f"@{me.username} the leeks are up!", as_name="Ann", group="Allotment"
    )
    chatter = sandbox_say(
        agent=agent, text="Ben, I'm moving to Leeds in May.", as_name="Ann", group="Allotment"
    )
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    conversation = Conversation.objects.get(kind=Conversation.Kind.GROUP)
    member = SandboxMember.objects.get(chat=chatter.chat, user=me)
    read_before = member.read_up_to
    assert read_before < chatter.message_id, "group chatter starts no turn: it is unread"
    assert conversation.last_read_message_id < chatter.message_id

    clock.advance(seconds=QUIET + 60)
    fake_llm.reply_with(tasks({"kind": "note", "content": "Ann moves to Leeds in May."}))
    assert _start(agent, clock) == 1
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    [graph] = _consolidations()
    assert (
        graph.status == TaskGraph.Status.DONE and Note.objects.get().content == "Ann moves to Leeds in May."
    )
    assert "Ben, I'm moving to Leeds in May." in _request_text(fake_llm.requests[-1]), "it looked back on it"
    member.refresh_from_db()
    conversation.refresh_from_db()
    assert member.read_up_to == read_before, "the consolidation turn marked the chatter read"
    assert conversation.last_read_message_id < chatter.message_id

    fake_llm.reply_with(tasks({"kind": "send", "text": "Leeds! Lovely."}))
    callout = sandbox_say(agent=agent, text=f"@{me.username} did you hear?", as_name="Ann", group="Allotment")
    harness.settle(until=clock.now() + dt.timedelta(minutes=5))
    member.refresh_from_db()
    conversation.refresh_from_db()
    assert member.read_up_to >= callout.message_id, "a reply turn reads the chat as before"
    assert conversation.last_read_message_id >= callout.message_id


def test_the_step_takes_the_agents_the_gateway_holds_and_reads_none_of_their_rows(
    agent, harness, clock, fake_llm
):
    """The lease step reads the held agents' rows at every full pass; the consolidation step uses those
    (at 1,000 agents, reading them again built 1,000 models once a minute). An edit the lease step
    brought in (the prompt taken away) counts at once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _chat(agent, harness, fake_llm)
    clock.advance(seconds=QUIET + 60)
    with CaptureQueriesContext(connection) as queries:
        assert harness.step("consolidation") is True
    agent_reads = [q["sql"] for q in queries if 'FROM "agents_agent"' in q["sql"].replace("`", '"')]
    assert all("FOR UPDATE" in sql or "LIMIT 1" in sql for sql in agent_reads), (
        agent_reads
    )  # _start's lock only
    assert len(agent_reads) <= 1

    Agent.objects.filter(pk=agent.pk).update(role_prompt_names=["Task-Memory"])  # an admin edit
    harness.step("leases")  # the next full pass brings it to the held client
    assert harness.gateway.clients[agent.pk].agent.role_prompt_names == ["Task-Memory"]
    _chat(agent, harness, fake_llm, text="And then to York.")
    clock.advance(seconds=QUIET + 60)
    harness.gateway.steps["consolidation"].last_check = None
    assert harness.step("consolidation") is False  # no longer consolidating
