"""Replanning keeps what the replaced turn was for: events, xsends, schedule turns and messages join
the new turn (one LLM call sees all of them) or queue behind the turn under way; none is dropped."""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest

from cindy_site.clock import now
from conversations.models import Conversation, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.services.graph_finish import graph_finish_if_complete
from conversations.services.graphs import graph_active, graph_replan
from engine.tests.harness import tasks
from memory.models import ScheduledEvent
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


def _prompt(request) -> str:
    return json.dumps(request.json, ensure_ascii=False)


def _event(agent, conversation, intent: str, *, seconds: int) -> ScheduledEvent:
    local = (now() + dt.timedelta(seconds=seconds)).astimezone(ZoneInfo(agent.timezone or "UTC"))
    return ScheduledEvent.objects.create(
        agent=agent,
        channel_id=conversation.peer_id,
        intent=intent,
        time_raw=local.strftime("%Y-%m-%dT%H:%M:%S"),
        created=now(),
    )


@pytest.fixture
def chat(agent, harness, fake_llm):
    """Wendy has answered You once; the chat is idle."""
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    fake_llm.clear()
    return Conversation.objects.get(agent=agent, title="You")


def test_a_message_written_while_an_event_turn_plans_queues_and_the_event_is_acted_on(
    agent, harness, fake_llm, chat, clock
):
    event = _event(agent, chat, "Ask how the exam went", seconds=60)
    clock.set(event.due_at)
    harness.step("events")
    harness.tick()  # the event's turn is claimed and handed to a worker
    sandbox_say(agent=agent, text="are you there?")
    harness.ingest()

    fake_llm.reply_with(tasks({"kind": "send", "text": "How did the exam go?"}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Yes, here!"}))
    harness.settle()

    assert sandbox_transcript(agent=agent)[-2:] == ["Wendy: How did the exam go?", "Wendy: Yes, here!"]
    prompts = [_prompt(r) for r in fake_llm.requests]
    assert sum("Ask how the exam went" in p for p in prompts) == 1
    assert not TaskGraph.objects.filter(trigger=TaskGraph.Trigger.EVENT, status="cancelled").exists()


def test_two_events_due_together_reach_the_llm_in_one_call(agent, harness, fake_llm, chat, clock):
    first = _event(agent, chat, "Remind them about the dentist", seconds=60)
    second = _event(agent, chat, "Ask about the weekend", seconds=62)
    clock.set(first.due_at)
    harness.step("events")
    clock.set(second.due_at)
    harness.step("events")

    fake_llm.reply_with(tasks({"kind": "send", "text": "Dentist tomorrow! And the weekend?"}))
    harness.settle()

    assert len(fake_llm.requests) == 1
    prompt = _prompt(fake_llm.requests[0])
    assert "Remind them about the dentist" in prompt and "Ask about the weekend" in prompt
    assert prompt.count("# Scheduled Event") == 2
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Dentist tomorrow! And the weekend?"


def test_an_event_due_while_a_reply_is_typed_does_not_cancel_the_reply(agent, harness, fake_llm, chat, clock):
    fake_llm.reply_with(tasks({"kind": "send", "text": "a long and thoughtful answer " * 5}))
    sandbox_say(agent=agent, text="tell me something")
    harness.settle(until=clock.now() + dt.timedelta(seconds=4))  # planned; the send is still typing
    send = TaskNode.objects.get(kind=NodeKind.SEND, status=NodeStatus.PENDING)
    event = _event(agent, chat, "Say good night", seconds=1)
    clock.set(event.due_at)
    harness.step("events")

    fake_llm.reply_with(tasks({"kind": "send", "text": "Good night!"}))
    harness.settle()

    send.refresh_from_db()
    assert send.status == NodeStatus.DONE
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Good night!"
    assert "Say good night" in _prompt(fake_llm.requests[-1])


def test_a_message_joins_a_pending_xsend_turn_and_both_are_in_one_prompt(agent, harness, fake_llm, chat):
    from conversations.services.initiative import conversation_xsend

    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi Bob"}))
    sandbox_say(agent=agent, text="hello", as_name="Bob")
    harness.settle()
    bob = Conversation.objects.get(agent=agent, title="Bob")
    fake_llm.clear()

    conversation_xsend(
        source=chat, target_peer_id=bob.peer_id, intent="Invite Bob to the party", source_node_id=1
    )
    sandbox_say(agent=agent, text="what are you up to?", as_name="Bob")
    fake_llm.reply_with(tasks({"kind": "send", "text": "Party on Friday, come!"}))
    harness.settle()

    assert len(fake_llm.requests) == 1
    prompt = _prompt(fake_llm.requests[0])
    assert "# Cross-channel Trigger" in prompt and "Invite Bob to the party" in prompt
    assert "Consider responding to message" in prompt


def test_an_event_joins_a_pending_message_turn_which_stays_answerable(agent, harness, fake_llm, chat, clock):
    sandbox_say(agent=agent, text="what's the plan?")
    harness.ingest()
    message_graph = graph_active(conversation=chat)
    event = _event(agent, chat, "Ask about dinner", seconds=0)
    clock.set(event.due_at)
    harness.step("events")

    joined = graph_active(conversation=chat)
    assert joined.trigger == TaskGraph.Trigger.EVENT
    assert joined.context["carried"][0]["target_message_id"] == message_graph.target_message_id
    fake_llm.reply_with(tasks({"kind": "send", "text": "Dinner at eight?"}))
    harness.settle()
    prompt = _prompt(fake_llm.requests[-1])
    assert "Ask about dinner" in prompt
    assert f"message_id {message_graph.target_message_id} has not been answered" in prompt


@pytest.mark.parametrize(
    ("trigger", "payload"),
    [
        (TaskGraph.Trigger.SCHEDULE, {"schedule": {"through": "x"}}),
        (TaskGraph.Trigger.SUMMARIZE, {"summarize": {"need": "summarize", "key": "k"}}),
    ],
)
def test_a_schedule_or_summarization_turn_replaced_by_a_message_runs_after_the_messages_turn(
    agent, chat, trigger, payload
):
    graph_replan(conversation=chat, trigger=trigger, target_message_id=None, context=payload)
    message = graph_replan(conversation=chat, trigger=TaskGraph.Trigger.MESSAGE, target_message_id=5)
    assert [item["trigger"] for item in message.context["queued"]] == [trigger]

    TaskNode.objects.filter(graph=message).update(status=NodeStatus.DONE)
    graph_finish_if_complete(graph_id=message.pk)

    after = graph_active(conversation=chat)
    assert after.trigger == trigger
    assert {k: after.context[k] for k in payload} == payload


def test_a_schedule_trigger_queues_behind_a_turn_under_way(agent, chat):
    message = graph_replan(conversation=chat, trigger=TaskGraph.Trigger.MESSAGE, target_message_id=5)
    queued = graph_replan(
        conversation=chat,
        trigger=TaskGraph.Trigger.SCHEDULE,
        target_message_id=None,
        context={"schedule": {}},
    )
    assert queued.pk == message.pk
    assert graph_active(conversation=chat).trigger == TaskGraph.Trigger.MESSAGE


def test_triggers_queued_behind_a_failed_turn_still_start(agent, chat):
    from conversations.services.graphs import graph_close

    message = graph_replan(conversation=chat, trigger=TaskGraph.Trigger.MESSAGE, target_message_id=5)
    TaskNode.objects.filter(graph=message).update(status=NodeStatus.RUNNING)
    graph_replan(
        conversation=chat,
        trigger=TaskGraph.Trigger.EVENT,
        target_message_id=None,
        context={"event": {"id": "e1", "intent": "x"}},
    )
    message.refresh_from_db()
    graph_close(graph=message, status=TaskGraph.Status.FAILED, reason="test")

    assert graph_active(conversation=chat).context["event"]["id"] == "e1"
