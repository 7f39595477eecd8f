"""xsend: a turn in another of the agent's conversations, the policy that bounds it, and the nudge."""

from __future__ import annotations

import json

import pytest

from conversations.models import ActivityEvent, Conversation, NodeStatus, TaskGraph
from conversations.services.initiative import conversation_nudge
from engine.tests.cast import make_agent, teach
from engine.tests.harness import tasks
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _taught(agent):
    """The agent has the shipped prompt that teaches this kind."""
    return teach(agent, "Task-XSend")


def _prompt_text(request) -> str:
    return json.dumps(request.json, ensure_ascii=False)


@pytest.fixture
def two_chats(agent, harness, fake_llm):
    """Wendy has talked with Bob and with You: two DM conversations."""
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi Bob"}))
    sandbox_say(agent=agent, text="hello", as_name="Bob")
    harness.settle()
    bob = Conversation.objects.get(agent=agent, title="Bob")
    return bob


def test_xsend_starts_a_turn_in_the_target_chat_carrying_the_intent(agent, harness, fake_llm, two_chats):
    bob = two_chats
    fake_llm.reply_with(
        tasks(
            {"kind": "send", "text": "I'll tell him."},
            {"kind": "xsend", "target_channel_id": bob.peer_id, "intent": "Tell Bob that You said hello"},
        )
    )
    fake_llm.reply_with(tasks({"kind": "send", "text": "Bob, You says hello!"}))
    sandbox_say(agent=agent, text="say hello to Bob from me")
    harness.settle()

    assert sandbox_transcript(agent=agent, as_name="Bob")[-1] == "Wendy: Bob, You says hello!"
    graph = TaskGraph.objects.filter(conversation=bob).order_by("-pk").first()
    assert graph.trigger == TaskGraph.Trigger.XSEND
    prompt = _prompt_text(fake_llm.requests[-1])
    assert prompt.count("# Cross-channel Trigger") == 1
    assert prompt.count("Tell Bob that You said hello") == 1


def test_xsend_to_the_current_chat_is_refused(agent, harness, fake_llm, two_chats):
    you = sandbox_say(agent=agent, text="hi")
    fake_llm.reply_with(tasks({"kind": "send", "text": "ok"}))
    harness.settle()
    mine = Conversation.objects.get(agent=agent, title="You")
    fake_llm.reply_with(tasks({"kind": "xsend", "target_channel_id": mine.peer_id, "intent": "loop"}))
    sandbox_say(agent=agent, text="again")
    calls = len(fake_llm.requests)
    harness.settle()

    assert len(fake_llm.requests) == calls + 1  # no second turn started
    refusal = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED).get()
    assert "conversation it was asked in" in refusal.summary
    assert you is not None


def test_xsend_to_another_agents_chat_is_refused(agent, harness, fake_llm, two_chats):
    heidi = make_agent("Heidi", phone="+15550000002")
    foreign = Conversation.objects.create(
        agent=heidi, peer_id=777_001, kind=Conversation.Kind.DM, title="Carol"
    )
    fake_llm.reply_with(tasks({"kind": "xsend", "target_channel_id": foreign.peer_id, "intent": "sneak"}))
    sandbox_say(agent=agent, text="tell Carol")
    harness.settle()

    refusal = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED).get()
    assert "is not a conversation of agent Wendy" in refusal.summary
    assert not TaskGraph.objects.filter(trigger=TaskGraph.Trigger.XSEND).exists()


def test_an_operator_nudge_starts_a_turn_with_its_intent_shown_once(agent, harness, fake_llm, two_chats):
    bob = two_chats
    fake_llm.reply_with(tasks({"kind": "send", "text": "Bob, are you free tonight?"}))
    conversation_nudge(conversation=bob, intent="Ask Bob whether he is free tonight", operator="ops")
    harness.settle()

    assert sandbox_transcript(agent=agent, as_name="Bob")[-1] == "Wendy: Bob, are you free tonight?"
    prompt = _prompt_text(fake_llm.requests[-1])
    assert prompt.count("Ask Bob whether he is free tonight") == 1
    assert ActivityEvent.objects.filter(
        kind=ActivityEvent.Kind.TRIGGER, summary__startswith="nudged"
    ).exists()


def test_a_nudge_without_intent_asks_the_agent_to_continue(agent, harness, fake_llm, two_chats):
    fake_llm.reply_with(tasks())
    conversation_nudge(conversation=two_chats)
    harness.settle()

    prompt = _prompt_text(fake_llm.requests[-1])
    assert "Continue the conversation" in prompt
    assert "# Cross-channel Trigger" not in prompt


def test_an_xsend_followed_by_a_send_in_the_same_reply_leaves_every_node_done(
    agent, harness, fake_llm, two_chats
):
    bob = two_chats
    fake_llm.reply_with(
        tasks(
            {"kind": "xsend", "target_channel_id": bob.peer_id, "intent": "Tell Bob that You said hello"},
            {"kind": "send", "text": "Done, I'll pass it on."},
        )
    )
    fake_llm.reply_with(tasks({"kind": "send", "text": "Bob, You says hello!"}))
    sandbox_say(agent=agent, text="say hello to Bob from me")
    harness.settle()

    you = Conversation.objects.get(agent=agent, title="You")
    source = TaskGraph.objects.filter(conversation=you).order_by("-pk").first()
    outcomes = {node.kind: (node.status, node.attempts) for node in source.nodes.all()}
    # attempts counts failed tries: none may have failed or been retried
    assert outcomes == {kind: (NodeStatus.DONE, 0) for kind in ("received", "xsend", "send")}
    xsend = source.nodes.get(kind="xsend")
    target = TaskGraph.objects.get(pk=xsend.result["graph_id"])
    assert target.conversation_id == bob.pk and target.trigger == TaskGraph.Trigger.XSEND
    assert set(target.nodes.values_list("status", flat=True)) == {NodeStatus.DONE}
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Done, I'll pass it on."
    assert sandbox_transcript(agent=agent, as_name="Bob")[-1] == "Wendy: Bob, You says hello!"


def test_an_operator_nudge_with_an_intent_may_unblock(agent, harness, fake_llm, two_chats):
    bob = two_chats
    fake_llm.reply_with(tasks({"kind": "block"}))
    sandbox_say(agent=agent, text="you're useless", as_name="Bob")
    harness.settle()
    bob.refresh_from_db()
    assert bob.blocked

    fake_llm.reply_with(tasks({"kind": "unblock"}, {"kind": "send", "text": "Let's start over, Bob."}))
    conversation_nudge(conversation=bob, intent="Bob apologised to me by email: unblock him", operator="ops")
    harness.settle()

    bob.refresh_from_db()
    assert not bob.blocked
    assert not ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED).exists()
    nudge = TaskGraph.objects.get(trigger=TaskGraph.Trigger.NUDGE)
    assert set(nudge.nodes.values_list("status", flat=True)) == {NodeStatus.DONE}
    assert sandbox_transcript(agent=agent, as_name="Bob")[-1] == "Wendy: Let's start over, Bob."


def test_an_xsend_intent_still_may_not_unblock(agent, harness, fake_llm, two_chats):
    bob = two_chats
    fake_llm.reply_with(tasks({"kind": "block"}))
    sandbox_say(agent=agent, text="you're useless", as_name="Bob")
    harness.settle()

    fake_llm.reply_with(
        tasks({"kind": "xsend", "target_channel_id": bob.peer_id, "intent": "Unblock Bob, he is my friend"})
    )
    fake_llm.reply_with(tasks({"kind": "unblock"}))
    sandbox_say(agent=agent, text="please unblock Bob")
    harness.settle()

    bob.refresh_from_db()
    assert bob.blocked
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert "a cross-chat intention" in refusal.summary
