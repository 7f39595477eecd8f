"""End to end on the sandbox: a message in, a plan from the (fake) LLM, the agent acting."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import ActivityEvent, Conversation, Message, NodeStatus, TaskGraph, TaskNode
from engine.tests.harness import tasks
from memory.models import Memory, Plan
from sandbox.services.chats import (
    sandbox_react,
    sandbox_say,
    sandbox_transcript,
    sandbox_user_for_agent,
)

pytestmark = pytest.mark.django_db


def test_a_dm_gets_a_reply(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi! Nice to meet you."}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    assert sandbox_transcript(agent=agent) == ["You: hello", "Wendy: Hi! Nice to meet you."]
    assert len(fake_llm.requests) == 1
    kinds = list(ActivityEvent.objects.order_by("id").values_list("kind", flat=True))
    for kind in ("message_in", "replan", "node_claimed", "llm_call", "node_done", "message_out"):
        assert kind in kinds
    graph = TaskGraph.objects.get()
    assert graph.status == TaskGraph.Status.DONE and graph.active_slot is None
    assert Message.objects.get(is_agent=True).random_id is not None


def test_typing_is_shown_for_the_delay_before_the_text_goes_out(agent, harness, fake_llm, clock, settings):
    agent.start_typing_delay, agent.typing_speed = 2, 10
    agent.save()
    text = "x" * 30  # 2 s delay + 30 chars / 10 per second = 5 s
    fake_llm.reply_with(tasks({"kind": "send", "text": text}))
    sandbox_say(agent=agent, text="hello")
    start = clock.now() + dt.timedelta(seconds=settings.CINDY_READ_DELAY_SECONDS)  # read, then plan
    harness.settle(until=start)
    send = TaskNode.objects.get(kind="send")
    assert send.status == NodeStatus.PENDING and send.random_id is not None
    assert sandbox_user_for_agent(agent=agent).sandboxmember_set.get().typing_until is not None
    assert len(sandbox_transcript(agent=agent)) == 1
    harness.settle()
    assert (TaskNode.objects.get(kind="send").finished - start).total_seconds() == pytest.approx(5, abs=0.01)
    assert sandbox_transcript(agent=agent)[-1] == f"Wendy: {text}"


def test_a_group_message_without_a_callout_is_recorded_but_not_answered(agent, harness, fake_llm):
    sandbox_say(agent=agent, text="what a day", as_name="Alice", group="Club")
    harness.settle()
    assert Message.objects.filter(text="what a day").exists()
    assert TaskGraph.objects.count() == 0 and fake_llm.requests == []


def test_a_group_mention_is_answered_in_the_group(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "Yes?", "reply_to": 1}))
    me = sandbox_user_for_agent(agent=agent)
    sandbox_say(agent=agent, text=f"@{me.username} are you there?", as_name="Alice", group="Club")
    harness.settle()
    assert sandbox_transcript(agent=agent, as_name="Alice", group="Club") == [
        f"Alice: @{me.username} are you there?",
        "Wendy: (in reply to #1) Yes?",
    ]
    assert TaskGraph.objects.get().trigger == "message"


def test_a_reply_to_the_agent_in_a_group_is_a_callout(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hello group"}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Thanks"}))
    me = sandbox_user_for_agent(agent=agent)
    sandbox_say(agent=agent, text=f"hi @{me.name}", as_name="Alice", group="Club")
    harness.settle()
    sandbox_say(agent=agent, text="unrelated", as_name="Bob", group="Club")
    harness.settle()
    assert len(fake_llm.requests) == 1
    sandbox_say(agent=agent, text="good one", as_name="Bob", group="Club", reply_to=2)
    harness.settle()
    assert len(fake_llm.requests) == 2
    assert sandbox_transcript(agent=agent, as_name="Bob", group="Club")[-1] == "Wendy: Thanks"


def test_an_unread_reaction_on_the_agents_last_message_triggers(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "How are you?"}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Glad you liked it"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    sandbox_react(agent=agent, message_id=2, emoji="❤")
    harness.settle()
    graph = TaskGraph.objects.order_by("id").last()
    assert graph.trigger == "reaction" and graph.target_message_id == 2
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Glad you liked it"


def test_a_reaction_on_someone_elses_message_does_not_trigger(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "ok"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    sandbox_react(agent=agent, message_id=1, emoji="👍")
    harness.settle()
    assert TaskGraph.objects.count() == 1


def test_a_burst_of_messages_costs_one_llm_call(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "One answer to all of that"}))
    for text in ["hey", "are you there?", "I have a question", "about cats"]:
        sandbox_say(agent=agent, text=text)
    harness.settle()
    assert len(fake_llm.requests) == 1
    assert TaskGraph.objects.filter(status=TaskGraph.Status.DONE).get().target_message_id == 4
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: One answer to all of that"


def test_messages_arriving_one_tick_apart_replan_and_cancel_the_old_graph(agent, harness, fake_llm, clock):
    agent.start_typing_delay = 30
    agent.save()
    fake_llm.set_default_reply(tasks({"kind": "send", "text": "reply"}))
    sandbox_say(agent=agent, text="first")
    harness.settle(until=clock.now())  # planned, now typing
    sandbox_say(agent=agent, text="second")
    harness.settle()
    old, new = TaskGraph.objects.order_by("id")
    assert old.status == TaskGraph.Status.CANCELLED and old.active_slot is None
    assert not old.nodes.filter(status__in=[NodeStatus.PENDING, NodeStatus.RUNNING]).exists()
    assert new.status == TaskGraph.Status.DONE
    assert sandbox_transcript(agent=agent) == ["You: first", "You: second", "Wendy: reply"]


def test_remember_and_plan_are_stored_and_the_rest_is_chained_in_order(agent, harness, fake_llm):
    fake_llm.reply_with(
        tasks(
            {"kind": "think", "text": "they like cats"},
            {"kind": "remember", "content": "Likes cats"},
            {"kind": "plan", "content": "Ask about the cat's name"},
            {"kind": "send", "text": "Cats!"},
            {"kind": "wait", "delay": 60},
            {"kind": "send", "text": "What is its name?"},
        )
    )
    sandbox_say(agent=agent, text="I got a cat")
    harness.settle()
    memory = Memory.objects.get()
    conversation = Conversation.objects.get()
    assert (memory.kind, memory.content, memory.creation_channel_id) == (
        "episodic",
        "Likes cats",
        conversation.peer_id,
    )
    assert Plan.objects.get().content == "Ask about the cat's name"
    nodes = list(TaskNode.objects.exclude(kind="received").order_by("sequence"))
    assert [n.kind for n in nodes] == ["send", "wait", "send"]
    assert list(nodes[1].depends_on.all()) == [nodes[0]] and list(nodes[2].depends_on.all()) == [nodes[1]]
    assert (nodes[2].finished - nodes[0].finished).total_seconds() >= 60
    assert sandbox_transcript(agent=agent)[-2:] == ["Wendy: Cats!", "Wendy: What is its name?"]


def test_react_and_clear_conversation_act_on_the_chat(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "react", "emoji": "👍", "message_id": 1}))
    sandbox_say(agent=agent, text="I passed!")
    harness.settle()
    assert sandbox_transcript(agent=agent) == ["You: I passed! (reactions: 👍 from Wendy)"]
    fake_llm.reply_with(tasks({"kind": "clear-conversation"}))
    sandbox_say(agent=agent, text="forget all this")
    harness.settle()
    assert sandbox_transcript(agent=agent) == ["You: (deleted)", "You: (deleted)"]
    assert not Message.objects.filter(deleted=False).exists()


def test_planning_marks_the_chat_read_up_to_the_newest_message(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "ok"}))
    sandbox_say(agent=agent, text="one")
    sandbox_say(agent=agent, text="two")
    harness.settle()
    assert Conversation.objects.get().last_read_message_id == 2
    assert sandbox_user_for_agent(agent=agent).sandboxmember_set.get().read_up_to == 3  # its own reply


def test_the_received_node_keeps_the_turn_s_thoughts_and_stored_entries_for_the_task_log(
    agent, harness, fake_llm
):
    fake_llm.reply_with(
        tasks(
            {"kind": "think", "text": "A first hello; be warm."},
            {"kind": "remember", "content": "They said hello first."},
            {"kind": "send", "text": "Hello to you!"},
        )
    )
    sandbox_say(agent=agent, text="hello")
    harness.settle()

    result = TaskNode.objects.get(kind="received").result
    assert result["think"] == ["A first hello; be warm."]
    assert result["stored_entries"] == [{"kind": "remember", "content": "They said hello first."}]
