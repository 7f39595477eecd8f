"""The index kept current at ingest: the gateway's batches, media the agent knows, and the stored
kinds written by their one service."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import TELEGRAM_SERVICE_USER_ID, Message
from conversations.transport.base import InboundMessage, MediaItem, MessageEdited, MessagesDeleted, NewMessage
from engine.ingest import ingest_updates
from media_catalog.models import MediaDescription
from memory.services.stored import stored_entry_apply
from memory.stored_kinds import StoreContext
from recall.models import RecallEntry, RecallMediaWait
from recall.selectors import recall_search
from recall.services import media_described
from recall.tests.conftest import ALICE, START

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)


def _record(message_id: int, text: str = "", *, peer: int = ALICE, **fields) -> InboundMessage:
    return InboundMessage(
        peer_id=peer,
        chat_kind="dm",
        message_id=message_id,
        date=START + dt.timedelta(minutes=message_id),
        sender_id=fields.pop("sender_id", peer),
        sender_name="Alice",
        text=text,
        **fields,
    )


def _found(agent, query: str) -> list[tuple[str, int | None]]:
    """What the words of `query` find (the full-text index alone: these tests follow its upkeep)."""
    hits = recall_search(agent_id=agent.pk, query=query, mode="fulltext")
    return [(hit.kind, hit.message_id) for hit in hits]


def test_the_gateway_s_batches_keep_the_index_current(wendy):
    ingest_updates(
        agent_id=wendy.pk, updates=[NewMessage(_record(1, "the ferry leaves at noon"))], trigger=False
    )
    assert _found(wendy, "ferries") == [("message", 1)]

    ingest_updates(
        agent_id=wendy.pk, updates=[MessageEdited(_record(1, "the train leaves at noon"))], trigger=False
    )
    assert (_found(wendy, "ferry"), _found(wendy, "trains")) == ([], [("message", 1)])

    ingest_updates(
        agent_id=wendy.pk, updates=[MessagesDeleted(peer_id=ALICE, message_ids=(1,))], trigger=False
    )
    assert _found(wendy, "train") == []
    assert not RecallEntry.objects.exists()


def test_media_are_found_by_what_the_agent_knows_of_them(wendy):
    MediaDescription.objects.create(unique_id="photo-1", kind="photo", description="a red bicycle by a wall")
    photo = MediaItem(media_kind="photo", unique_id="photo-1")
    voice = MediaItem(media_kind="voice", unique_id="voice-9", extra={"transcript": "I'll bring the lantern"})
    document = MediaItem(media_kind="document", unique_id="doc-2", file_name="tax_return_2025.pdf")
    ingest_updates(
        agent_id=wendy.pk,
        updates=[
            NewMessage(_record(1, "look at this", media=(photo,))),
            NewMessage(_record(2, is_outgoing=True, sender_id=None, media=(voice,))),
            NewMessage(_record(3, media=(document,))),
        ],
        trigger=False,
    )

    assert _found(wendy, "bicycles") == [("message", 1)]
    assert _found(wendy, "lanterns") == [("message", 2)]
    assert _found(wendy, "tax return") == [("message", 3)]


def test_service_lines_sign_in_codes_and_empty_messages_are_left_out(wendy):
    ingest_updates(
        agent_id=wendy.pk,
        updates=[
            NewMessage(
                _record(1, "Login code: 12345. Do not give it to anyone", peer=TELEGRAM_SERVICE_USER_ID)
            ),
            NewMessage(_record(2, "Alice joined the group", is_service=True)),
            NewMessage(_record(3, "", media=(MediaItem(media_kind="sticker", unique_id="st-1"),))),
        ],
        trigger=False,
    )
    assert not RecallEntry.objects.exists()


def test_what_the_agent_stores_is_recalled_and_forgotten_with_it(wendy, say):
    chat, _ = say(ALICE, "hi")
    context = StoreContext(agent_id=wendy.pk, channel_id=ALICE, channel_name="Alice")
    stored_entry_apply(
        kind="note", context=context, entry_id="note-1", content="Alice is allergic to peanuts"
    )
    stored_entry_apply(
        kind="remember", context=context, entry_id="memory-1", content="I once climbed Kilimanjaro"
    )
    stored_entry_apply(kind="intend", context=context, entry_id="intent-1", content="learn to play the cello")
    stored_entry_apply(kind="plan", context=context, entry_id="plan-1", content="ask Alice about her exam")
    stored_entry_apply(
        kind="summarize", context=context, entry_id="summary-1", content="Alice talked about her exams"
    )

    note = RecallEntry.objects.get(kind="note")
    assert (note.conversation_id, note.peer_id) == (None, ALICE)
    assert [h.conversation_id for h in recall_search(agent_id=wendy.pk, query="peanuts")] == [chat.pk]
    assert RecallEntry.objects.get(kind="memory").peer_id is None
    assert _found(wendy, "peanut") == [("note", None)]
    assert _found(wendy, "cellos") == [("intention", None)]
    assert sorted(kind for kind, _ in _found(wendy, "exams")) == ["plan", "summary"]
    assert [h.kind for h in recall_search(agent_id=wendy.pk, query="Kilimanjaro", conversation=chat)] == [
        "memory"
    ]

    stored_entry_apply(kind="note", context=context, entry_id="note-1", content="Alice is allergic to cats")
    assert _found(wendy, "peanut") == [] and _found(wendy, "cat") == [("note", None)]
    stored_entry_apply(kind="note", context=context, entry_id="note-1", content="")
    assert _found(wendy, "cat") == []


def test_a_description_written_after_the_message_makes_it_findable(wendy):
    photo = MediaItem(media_kind="photo", unique_id="photo-7")
    sticker = MediaItem(media_kind="photo", unique_id="photo-8")
    ingest_updates(
        agent_id=wendy.pk,
        updates=[NewMessage(_record(1, "look", media=(photo,))), NewMessage(_record(2, media=(sticker,)))],
        trigger=False,
    )
    assert _found(wendy, "bicycle") == [] and RecallEntry.objects.count() == 1

    MediaDescription.objects.create(unique_id="photo-7", kind="photo", description="a red bicycle by a wall")
    assert _found(wendy, "bicycles") == [("message", 1)]

    # The worker's later description of an existing row is an `update()`: it tells recall itself.
    row = MediaDescription.objects.create(
        unique_id="photo-8", kind="photo", description=None, status="failed"
    )
    assert _found(wendy, "kayak") == []
    MediaDescription.objects.filter(pk=row.pk).update(description="a yellow kayak on a beach", status="ok")
    assert RecallMediaWait.objects.get().message_id == Message.objects.get(message_id=2).pk  # still waits
    assert media_described(unique_ids=["photo-8"]) == 1
    assert _found(wendy, "kayaks") == [("message", 2)]
    assert not RecallMediaWait.objects.exists()
