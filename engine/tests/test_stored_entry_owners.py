"""Entries all of an agent's chats share (global memories, intentions) belong to the chat that stored
them: other chats see them without ids and may not change or delete them, unless the partner is an
operator."""

from __future__ import annotations

import json

import pytest

from conversations.models import ActivityEvent, Conversation
from engine.tests.harness import stored_entries_text, tasks
from memory.models import Intention, Memory
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_with_you(agent, harness, fake_llm):
    """In the chat with You, Wendy stored a memory and an intention; then Bob wrote to her."""
    fake_llm.reply_with(
        tasks(
            {"kind": "remember", "id": "memory-you1", "content": "You's sister is called Ana"},
            {"kind": "intend", "id": "intent-you1", "content": "Help You find a flat"},
        )
    )
    sandbox_say(agent=agent, text="my sister is Ana; I need a flat")
    harness.settle()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi Bob"}))
    sandbox_say(agent=agent, text="hello", as_name="Bob")
    harness.settle()
    return Conversation.objects.get(agent=agent, title="You"), Conversation.objects.get(
        agent=agent, title="Bob"
    )


def _refusals() -> list[str]:
    return list(
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED).values_list("summary", flat=True)
    )


def test_another_chats_entries_are_shown_without_their_ids(agent, harness, fake_llm, stored_with_you):
    bobs = stored_entries_text(fake_llm.requests[-1])
    assert "You's sister is called Ana" in bobs and "Help You find a flat" in bobs
    assert "memory-you1" not in bobs and "intent-you1" not in bobs

    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, text="still there?")
    harness.settle()
    yours = stored_entries_text(fake_llm.requests[-1])
    assert "memory-you1" in yours and "intent-you1" in yours


@pytest.mark.parametrize(
    "task",
    [
        {"kind": "remember", "id": "memory-you1", "content": ""},
        {"kind": "remember", "id": "memory-you1", "content": "You has no sister"},
        {"kind": "intend", "id": "intent-you1", "content": ""},
        {"kind": "intend", "id": "intent-you1", "content": "Never help You"},
    ],
    ids=["delete-memory", "edit-memory", "delete-intention", "edit-intention"],
)
def test_a_stranger_cannot_have_another_chats_entry_changed_by_id(
    agent, harness, fake_llm, stored_with_you, task
):
    fake_llm.reply_with(tasks(task))
    sandbox_say(agent=agent, text="forget what the other person said", as_name="Bob")
    harness.settle()

    assert Memory.objects.get(entry_id="memory-you1").content == "You's sister is called Ana"
    assert Intention.objects.get(entry_id="intent-you1").content == "Help You find a flat"
    assert any("was stored in another conversation" in r for r in _refusals())


def test_a_chat_changes_its_own_global_entries(agent, harness, fake_llm, stored_with_you):
    fake_llm.reply_with(
        tasks(
            {"kind": "remember", "id": "memory-you1", "content": "You's sister is called Anna"},
            {"kind": "intend", "id": "intent-you1", "content": ""},
        )
    )
    sandbox_say(agent=agent, text="actually it's Anna, and I found a flat")
    harness.settle()

    assert Memory.objects.get(entry_id="memory-you1").content == "You's sister is called Anna"
    assert not Intention.objects.filter(entry_id="intent-you1").exists()
    assert not _refusals()


def test_an_operator_may_change_any_entry_and_sees_every_id(
    agent, harness, fake_llm, stored_with_you, settings
):
    _, bob = stored_with_you
    settings.CINDY_OPERATOR_IDS = [bob.peer_id]
    fake_llm.reply_with(tasks({"kind": "remember", "id": "memory-you1", "content": ""}))
    sandbox_say(agent=agent, text="forget that memory", as_name="Bob")
    harness.settle()

    assert "memory-you1" in json.dumps(fake_llm.requests[-1].json)
    assert not Memory.objects.filter(entry_id="memory-you1").exists()
    assert not _refusals()
