"""Which trigger a recorded message gets (engine.triggers.message_decision)."""

from __future__ import annotations

import json

import pytest

from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, Message, TaskGraph
from engine.tests.harness import Harness
from engine.triggers import message_decision, unread_mark_decision
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def _chat(agent, kind=Conversation.Kind.DM, peer_id=1001):
    return Conversation.objects.create(agent=agent, peer_id=peer_id, kind=kind, title="Alice")


def _message(conversation, message_id, *, is_agent=False, **fields):
    return Message.objects.create(
        conversation=conversation,
        message_id=message_id,
        sender_id=None if is_agent else conversation.peer_id,
        sender_name="" if is_agent else "Alice",
        is_agent=is_agent,
        date=now(),
        text=fields.pop("text", f"message {message_id}"),
        **fields,
    )


def _trigger(agent, conversation, message):
    return message_decision(agent=agent, conversation=conversation, message=message).trigger


def test_the_first_message_of_a_dm_starts_a_new_conversation(agent, clock):
    chat = _chat(agent)

    assert _trigger(agent, chat, _message(chat, 1)) == "new_conversation"
    assert _trigger(agent, chat, _message(chat, 2)) == "message"


@pytest.mark.parametrize(
    "earlier",
    [{"is_agent": True}, {"is_service": True, "text": ""}, {"deleted": True}],
    ids=["agent-wrote-first", "service-message", "deleted-message"],
)
def test_any_earlier_message_in_the_mirror_means_it_is_not_new(agent, clock, earlier):
    chat = _chat(agent)
    _message(chat, 1, **earlier)

    assert _trigger(agent, chat, _message(chat, 2)) == "message"


def test_a_group_callout_is_a_message_even_when_it_is_the_first(agent, clock):
    group = _chat(agent, kind=Conversation.Kind.GROUP, peer_id=-2002)

    assert _trigger(agent, group, _message(group, 1, mentions_agent=True)) == "message"


def test_a_quiet_chat_does_not_trigger_even_its_first_message(agent, clock):
    chat = _chat(agent)
    chat.muted = True
    chat.save()

    assert _trigger(agent, chat, _message(chat, 1)) is None


def test_a_new_dm_gets_the_new_conversation_instruction(agent, clock, fake_llm):
    harness = Harness(clock)
    harness.start()
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "Hello, stranger!"}]))

    sandbox_say(agent=agent, text="hi, we have not met")
    harness.settle()
    sandbox_say(agent=agent, text="how are you?")
    harness.settle()

    triggers = list(TaskGraph.objects.order_by("id").values_list("trigger", flat=True))
    assert triggers == ["new_conversation", "message"]
    finals = [r.json["contents"][-1]["parts"][0]["text"] for r in fake_llm.requests]
    assert "This is the start of a new conversation" in finals[0]
    assert "start of a new conversation" not in finals[1]


def test_a_gagged_chat_records_messages_but_does_not_trigger(agent, clock):
    chat = _chat(agent)
    chat.gagged = True
    chat.save()

    message = _message(chat, 1)

    assert Message.objects.filter(pk=message.pk).exists()
    assert _trigger(agent, chat, message) is None
    assert message_decision(agent=agent, conversation=chat, message=message).reason == "chat gagged"


def test_gagging_one_chat_leaves_the_agents_other_chats_triggering(agent, clock):
    gagged, open_chat = _chat(agent), _chat(agent, peer_id=1002)
    gagged.gagged = True
    gagged.save()

    assert _trigger(agent, gagged, _message(gagged, 2)) is None
    assert _trigger(agent, open_chat, _message(open_chat, 2)) == "new_conversation"


def test_a_muted_group_still_hears_a_mention_and_a_reply_but_not_chatter(agent, clock):
    group = _chat(agent, kind=Conversation.Kind.GROUP, peer_id=-2003)
    group.muted = True
    group.save()
    _message(group, 1, is_agent=True)

    assert _trigger(agent, group, _message(group, 2, mentions_agent=True)) == "message"
    assert _trigger(agent, group, _message(group, 3, reply_to_id=1)) == "message"
    chatter = _message(group, 4)
    assert _trigger(agent, group, chatter) is None
    assert message_decision(agent=agent, conversation=group, message=chatter).reason == "chat muted"


def test_a_muted_dm_answers_a_mention_or_a_reply_to_the_agent_only(agent, clock):
    chat = _chat(agent)
    _message(chat, 1)
    _message(chat, 2, is_agent=True)
    chat.muted = True
    chat.save()

    assert _trigger(agent, chat, _message(chat, 3)) is None
    assert _trigger(agent, chat, _message(chat, 4, reply_to_id=2)) == "message"
    assert _trigger(agent, chat, _message(chat, 5, mentions_agent=True)) == "message"


def test_an_unread_mark_is_a_callout_even_when_muted_but_not_when_gagged(agent, clock):
    chat = _chat(agent)
    chat.muted = True
    chat.save()

    assert unread_mark_decision(agent=agent, conversation=chat).trigger == "message"
    chat.gagged = True
    chat.save()
    assert unread_mark_decision(agent=agent, conversation=chat).reason == "chat gagged"
    service = _chat(agent, peer_id=777000)
    assert unread_mark_decision(agent=agent, conversation=service).trigger is None


NOT_ADDRESSED = (
    "not addressed: groups answer callouts only (an @mention of the agent, a reply to one of its "
    "messages, a reaction on its last message, or the chat marked unread)"
)


def _not_addressed_lines(agent) -> list[str]:
    return list(
        ActivityEvent.objects.filter(agent=agent, summary__contains="not addressed")
        .order_by("id")
        .values_list("summary", flat=True)
    )


def test_a_sandbox_group_message_without_a_callout_says_in_the_activity_why_it_is_not_answered(
    agent, clock, fake_llm
):
    harness = Harness(clock)
    harness.start()
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "Hi Ann!"}]))

    chatter = sandbox_say(agent=agent, text="anyone up for tea?", as_name="Ann", group="Club")
    harness.settle()
    assert not fake_llm.requests and not TaskGraph.objects.exists()
    [line] = _not_addressed_lines(agent)
    assert line == f"Ann #{chatter.message_id} {NOT_ADDRESSED}"
    event = ActivityEvent.objects.get(summary=line)
    assert event.conversation.kind == Conversation.Kind.GROUP  # shown in the sandbox chat's activity

    sandbox_say(agent=agent, text=f"@{agent.name} tea?", as_name="Ann", group="Club")
    harness.settle()
    assert len(fake_llm.requests) == 1, "a mention is answered"
    assert len(_not_addressed_lines(agent)) == 1, "and says nothing of the kind"


def test_a_telegram_groups_chatter_writes_no_line(agent, clock):
    agent.transport = "telegram"
    group = _chat(agent, kind=Conversation.Kind.GROUP, peer_id=-2004)

    decision = message_decision(agent=agent, conversation=group, message=_message(group, 1))
    assert (decision.trigger, decision.reason) == (None, "group chatter without a callout")
    assert _not_addressed_lines(agent) == []
