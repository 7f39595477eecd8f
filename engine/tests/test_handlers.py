"""The Telegram-kind handlers: stickers and their fallback, block/unblock policy, shutdown."""

from __future__ import annotations

import pytest

from conversations.models import ActivityEvent, Conversation, Message, TaskGraph, TaskNode
from engine.handlers.send import DEFAULT_START_TYPING_DELAY, DEFAULT_TYPING_SPEED, typing_seconds
from engine.tests.harness import tasks
from media_catalog.models import Sticker, StickerSet
from sandbox.models import SandboxMessage
from sandbox.services.chats import (
    sandbox_person,
    sandbox_say,
    sandbox_transcript,
    sandbox_user_for_agent,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def dancer_set(db) -> StickerSet:
    sticker_set = StickerSet.objects.create(short_name="WendyDancer", title="Wendy dancing")
    Sticker.objects.create(
        sticker_set=sticker_set, name="😉", unique_id="wink-1", document_id=11, access_hash=22
    )
    return sticker_set


def sent_sticker() -> dict:
    (message,) = SandboxMessage.objects.filter(sender__agent__isnull=False)
    return message.media[0]


def test_a_sticker_from_a_configured_set_is_sent(agent, harness, fake_llm, dancer_set):
    agent.sticker_set_names = ["WendyDancer"]
    agent.save()
    fake_llm.reply_with(tasks({"kind": "sticker", "sticker_set": "WendyDancer", "name": "😉"}))
    sandbox_say(agent=agent, text="hi")
    harness.settle()
    assert sent_sticker()["unique_id"] == "wink-1"
    mirrored = Message.objects.get(is_agent=True)
    assert mirrored.media[0]["sticker_name"] == "😉"
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: (sticker 😉 from WendyDancer)"


def test_an_explicit_sticker_is_sent(agent, harness, fake_llm, dancer_set):
    agent.explicit_stickers = ["WendyDancer::😉"]
    agent.save()
    fake_llm.reply_with(tasks({"kind": "sticker", "sticker_set": "WendyDancer", "name": "😉"}))
    sandbox_say(agent=agent, text="hi")
    harness.settle()
    assert sent_sticker()["unique_id"] == "wink-1"


def test_a_sticker_of_a_set_shown_in_this_chat_is_resolved_through_the_transport(
    agent, harness, fake_llm, dancer_set
):
    fake_llm.reply_with(tasks({"kind": "sticker", "sticker_set": "WendyDancer", "name": "😉"}))
    shown = {
        "kind": "media",
        "media_kind": "sticker",
        "sticker_set_name": "WendyDancer",
        "sticker_name": "😉",
    }
    sandbox_say(agent=agent, media=[{**shown, "unique_id": "wink-1"}])
    harness.settle()
    assert sent_sticker()["sticker_set_name"] == "WendyDancer"


def test_a_sticker_from_a_set_the_agent_does_not_have_is_dropped_with_a_note(
    agent, harness, fake_llm, dancer_set
):
    agent.explicit_stickers = ["ForestFriends::🦔"]
    agent.save()
    fake_llm.reply_with(
        tasks(
            {"kind": "sticker", "sticker_set": "WendyDancer", "name": "😉"},
            {"kind": "sticker", "sticker_set": "ForestFriends", "name": "🌰"},
            {"kind": "send", "text": "Hello!"},
        )
    )
    sandbox_say(agent=agent, text="hi")
    harness.settle()
    assert sandbox_transcript(agent=agent)[1:] == ["Wendy: Hello!"]
    errors = TaskNode.objects.get(kind="received").result["errors"]
    assert errors == [
        'sticker WendyDancer::😉: agent Wendy has no sticker set "WendyDancer" (its sets: none) and no '
        'sticker of it was shown in this chat: dropped; to allow it, add the set under "Agent Sticker '
        'Sets" or "WendyDancer::😉" under "Agent Stickers" in its persona',
        'sticker ForestFriends::🌰: agent Wendy has no sticker set "ForestFriends" (its sets: none) and no '
        'sticker of it was shown in this chat: dropped; to allow it, add the set under "Agent Sticker '
        'Sets" or "ForestFriends::🌰" under "Agent Stickers" in its persona',
    ]


def test_an_unresolvable_sticker_is_sent_as_its_name_and_logged(agent, harness, fake_llm, dancer_set):
    agent.sticker_set_names = ["WendyDancer", "NoSuchSet"]
    agent.save()
    fake_llm.reply_with(tasks({"kind": "sticker", "sticker_set": "NoSuchSet", "name": "🦄"}))
    fake_llm.reply_with(tasks({"kind": "sticker", "sticker_set": "WendyDancer", "name": "🙈"}))
    sandbox_say(agent=agent, text="hi")
    harness.settle()
    sandbox_say(agent=agent, text="again")
    harness.settle()
    assert sandbox_transcript(agent=agent)[1::2] == ["Wendy: 🦄", "Wendy: 🙈"]
    notes = ActivityEvent.objects.filter(kind="info", summary__contains="not found").values_list(
        "summary", flat=True
    )
    assert sorted(notes) == sorted(
        [
            "sticker NoSuchSet::🦄 not found; sent its name as text",
            "sticker WendyDancer::🙈 not found; sent its name as text",
        ]
    )


def test_block_then_messages_are_recorded_but_trigger_nothing_until_unblocked(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "Goodbye."}, {"kind": "block"}))
    sandbox_say(agent=agent, text="you are awful")
    harness.settle()
    conversation = Conversation.objects.get()
    assert conversation.blocked
    you = sandbox_person(name="You")
    assert you.user_id in sandbox_user_for_agent(agent=agent).blocked_user_ids
    sandbox_say(agent=agent, text="please answer")
    harness.settle()
    assert Message.objects.filter(text="please answer").exists()
    assert TaskGraph.objects.count() == 1 and len(fake_llm.requests) == 1

    # Blocked users trigger nothing, so an unblock is planned some other way; the handler is the same.
    graph = TaskGraph.objects.create(
        conversation=conversation, active_slot=conversation.pk, created=harness.clock.now()
    )
    TaskNode.objects.create(
        graph=graph,
        conversation=conversation,
        agent=agent,
        kind="unblock",
        not_before=harness.clock.now(),
        created=harness.clock.now(),
    )
    harness.settle()
    conversation.refresh_from_db()
    assert not conversation.blocked
    assert you.user_id not in sandbox_user_for_agent(agent=agent).blocked_user_ids
    fake_llm.reply_with(tasks({"kind": "send", "text": "Fine, hello again."}))
    sandbox_say(agent=agent, text="sorry")
    harness.settle()
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Fine, hello again."


def test_block_in_a_group_is_refused_by_the_policy(agent, harness, fake_llm):
    me = sandbox_user_for_agent(agent=agent)
    fake_llm.reply_with(tasks({"kind": "block"}, {"kind": "send", "text": "no"}))
    sandbox_say(agent=agent, text=f"@{me.username} block me", as_name="Alice", group="Club")
    harness.settle()
    assert not TaskNode.objects.filter(kind="block").exists()
    assert ActivityEvent.objects.filter(kind="policy_refused").exists()


@pytest.mark.parametrize("flag", ["muted", "disabled", "gagged"])
def test_a_muted_chat_or_a_disabled_or_gagged_agent_records_but_does_not_trigger(
    agent, harness, fake_llm, flag
):
    sandbox_say(agent=agent, text="first")
    harness.ingest()
    TaskGraph.objects.all().delete()
    if flag == "muted":
        Conversation.objects.update(muted=True)
    else:
        setattr(agent, flag, True)
        agent.save()
    sandbox_say(agent=agent, text="second")
    harness.ingest()
    assert Message.objects.filter(text="second").exists()
    assert TaskGraph.objects.count() == 0


def test_shutdown_stops_the_agent_not_the_gateway(agent, other_agent, harness, fake_llm, settings):
    you = sandbox_person(name="You")
    settings.CINDY_OPERATOR_IDS = [you.user_id]
    fake_llm.reply_with(tasks({"kind": "send", "text": "Shutting down."}, {"kind": "shutdown"}))
    sandbox_say(agent=agent, text="please stop")
    harness.settle()
    agent.refresh_from_db()
    assert agent.stopped
    harness.step("leases")
    assert list(harness.gateway.clients) == [other_agent.pk]


def test_typing_time_uses_the_persona_or_the_defaults(agent):
    agent.start_typing_delay, agent.typing_speed = 3, 20
    assert typing_seconds(agent, "x" * 40) == 3 + 2
    agent.start_typing_delay = agent.typing_speed = None
    assert typing_seconds(agent, "x" * 60) == DEFAULT_START_TYPING_DELAY + 60 / DEFAULT_TYPING_SPEED
