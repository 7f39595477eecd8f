"""The shipped sample personas, imported as a newcomer imports them, can use every kind their prompts
teach (SCHEMA_TASKS markers): none is dropped, refused or failed."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import call_command

from agents.models import Agent
from conversations.models import Conversation, NodeStatus, TaskGraph, TaskNode
from engine.tests.harness import Harness, tasks
from llm.prompt.sections import included_prompts
from llm.task_schema import conversational_kinds, taught_kinds
from llm.tasks import known_kinds
from memory.models import Intention, Memory, Note, Plan, ScheduledEvent, ScheduleEntry
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db

#: What the shipped Instructions prompt teaches every persona.
INSTRUCTIONS_KINDS = {*conversational_kinds(), "summarize", "clear-conversation", "shutdown"}


@pytest.fixture
def samples(settings, clock) -> dict[str, Agent]:
    settings.CINDY_AGENT_CONFIG_PATH = "samples:configdir"
    err = io.StringIO()
    call_command("importagents", stdout=io.StringIO(), stderr=err)
    assert err.getvalue() == ""
    return {agent.name: agent for agent in Agent.objects.all()}


@pytest.fixture
def harness(samples, clock, fake_llm):
    h = Harness(clock)
    h.start()
    return h


@pytest.mark.parametrize(
    ("persona", "expected"),
    [
        ("Wendy", INSTRUCTIONS_KINDS),
        ("Bramble", INSTRUCTIONS_KINDS | {"recall"}),  # and Task-Recall
        ("Orla", set(known_kinds())),  # her role prompts teach every other kind
    ],
)
def test_each_sample_persona_is_taught_the_kinds_of_its_prompts(samples, persona, expected):
    assert set(taught_kinds(included_prompts(samples[persona], include_retrieve=True))) == expected


def test_orla_uses_every_kind_of_one_turn_and_nothing_is_dropped(samples, harness, fake_llm, clock):
    orla = samples["Orla"]
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hello Sam."}))
    sandbox_say(agent=orla, text="hi", as_name="Sam")
    harness.settle()
    sam = Conversation.objects.get(agent=orla, title="Sam")
    later = (clock.now() + dt.timedelta(days=1)).astimezone(dt.UTC)
    fake_llm.reply_with(
        tasks(
            {"kind": "think", "text": "Keep it all."},
            {"kind": "remember", "content": "Studies tide tables."},
            {"kind": "note", "content": "Asked about tides."},
            {"kind": "plan", "content": "Find the 1850 tide tables."},
            {"kind": "intend", "content": "Learn more about tides."},
            {"kind": "event", "intent": "Ask about the tide tables.", "time": later.isoformat()},
            {
                "kind": "schedule",
                "start_time": later.isoformat(),
                "end_time": (later + dt.timedelta(hours=1)).isoformat(),
                "activity_name": "Archive visit",
                "description": "Tide tables",
                "responsiveness": 50,
            },
            {"kind": "xsend", "target_channel_id": sam.peer_id, "intent": "Tell Sam about the tides."},
            {"kind": "send", "text": "I'll look into it."},
            {"kind": "react", "emoji": "👍", "message_id": 1},
        )
    )
    fake_llm.reply_with(tasks({"kind": "send", "text": "Sam, news about the tides."}))
    sandbox_say(agent=orla, text="tell me about tides, and tell Sam")
    harness.settle()

    received = TaskNode.objects.filter(kind="received", graph__conversation__title="You").get()
    assert received.status == NodeStatus.DONE
    assert (received.result["errors"], received.result["refused"]) == ([], [])
    assert len(received.result["stored"]) == 6
    assert set(received.graph.nodes.values_list("status", flat=True)) == {NodeStatus.DONE}
    assert set(received.graph.nodes.values_list("attempts", flat=True)) == {0}
    assert sandbox_transcript(agent=orla)[-1] == "Orla: I'll look into it."
    assert sandbox_transcript(agent=orla, as_name="Sam")[-1] == "Orla: Sam, news about the tides."
    assert TaskGraph.objects.filter(conversation=sam, trigger=TaskGraph.Trigger.XSEND).exists()
    assert Memory.objects.filter(agent=orla, content="Studies tide tables.").exists()
    assert Note.objects.filter(agent=orla, content="Asked about tides.").exists()
    assert Plan.objects.filter(agent=orla, content="Find the 1850 tide tables.").exists()
    assert Intention.objects.filter(agent=orla, content="Learn more about tides.").exists()
    assert ScheduledEvent.objects.filter(agent=orla).exists()
    assert ScheduleEntry.objects.filter(agent=orla, activity="Archive visit").exists()
