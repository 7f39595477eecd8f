"""Saving a chat's media to the catalog and the library (conversations.services.media_save): the
sandbox path (a library item with the file, at once), the Telegram path (a gateway request), media
already in the library, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from agents.models import Agent, GatewayRequest, Transport
from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, Message
from conversations.services.media_save import Outcome, conversation_media_save, media_save_options
from media_catalog.models import LibraryItem, MediaDescription, StickerAccess

pytestmark = pytest.mark.django_db

JPEG = b"\xff\xd8\xff\xe0 a small photo \xff\xd9"


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "p1.jpg").write_bytes(JPEG)
    return tmp_path


def _chat(transport: str) -> Conversation:
    agent = Agent.objects.create(
        name=f"Wendy-{transport}", phone="+15550000001", instructions="x", transport=transport
    )
    chat = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Alice")
    Message.objects.create(
        conversation=chat,
        message_id=5,
        sender_id=77,
        date=now(),
        text="look",
        media=[
            {
                "kind": "media",
                "media_kind": "photo",
                "unique_id": "P1",
                "mime": "image/jpeg",
                "file": "sandbox/p1.jpg",
            },
            {"kind": "media", "media_kind": "voice", "unique_id": "V1", "mime": "audio/ogg"},
        ],
    )
    MediaDescription.objects.create(
        unique_id="P1", kind="photo", description="a kite", status="ok", source="ai"
    )
    return chat


def _save(chat: Conversation, **kwargs):
    values = {"message_id": 5, "unique_id": "P1", "description": "a blue kite over the beach", "by": "ann"}
    return conversation_media_save(conversation=chat, **{**values, **kwargs})


def test_a_sandbox_agent_gets_the_file_in_its_library_and_the_catalog_curates_it(media_root):
    chat = _chat(Transport.SANDBOX)
    assert media_save_options(conversation=chat, parts=chat.messages.get().media) == {
        "P1": {"description": "a kite", "in_library": False}
    }
    saved = _save(chat)
    assert saved.outcome == Outcome.SAVED and "saved to the agent's library" in saved.message
    item = LibraryItem.objects.get(agent=chat.agent, unique_id="P1")
    assert (item.kind, item.mime, item.description) == ("photo", "image/jpeg", "a blue kite over the beach")
    assert Path(item.file.path).read_bytes() == JPEG
    row = MediaDescription.objects.get(unique_id="P1")
    assert (row.source, row.status, row.description) == ("curated", "curated", "a blue kite over the beach")
    assert Path(row.file.path).read_bytes() == JPEG and row.file.name.startswith("media_catalog/")
    event = ActivityEvent.objects.get(conversation_id=chat.pk, kind=ActivityEvent.Kind.INFO)
    assert event.summary.startswith("ann: The photo P1 is saved") and event.data["media_save"] == "saved"
    assert not GatewayRequest.objects.exists()

    again = _save(chat, description="a kite, seen from below")
    assert again.outcome == Outcome.ALREADY and "already in the agent's library" in again.message
    assert LibraryItem.objects.filter(agent=chat.agent).count() == 1
    assert LibraryItem.objects.get().description == "a kite, seen from below"
    assert MediaDescription.objects.get(unique_id="P1").description == "a kite, seen from below"
    assert media_save_options(conversation=chat, parts=chat.messages.get().media)["P1"]["in_library"] is True


def test_a_telegram_agent_asks_its_gateway_once(media_root):
    chat = _chat(Transport.TELEGRAM)
    saved = _save(chat)
    assert saved.outcome == Outcome.REQUESTED and "the gateway will save it" in saved.message
    request = GatewayRequest.objects.get()
    assert (request.kind, request.status) == ("save_to_library", "pending")
    assert request.params == {
        "peer_id": 77,
        "message_id": 5,
        "unique_id": "P1",
        "description": "a blue kite over the beach",
    }
    assert not LibraryItem.objects.exists()  # the library refresh lists it once it is in Saved Messages
    assert MediaDescription.objects.get(unique_id="P1").is_curated

    pending = _save(chat, description="a kite")  # asked already: no second request
    assert pending.outcome == Outcome.PENDING and "already saving the photo P1" in pending.message
    assert GatewayRequest.objects.get().params["description"] == "a blue kite over the beach"
    assert MediaDescription.objects.get(unique_id="P1").description == "a kite"

    GatewayRequest.objects.update(status=GatewayRequest.Status.FAILED, error="FLOOD_WAIT")
    assert _save(chat).outcome == Outcome.REQUESTED  # a failed request is asked again
    assert GatewayRequest.objects.count() == 2


def test_a_sticker_kept_in_saved_messages_is_already_in_the_library(media_root):
    chat = _chat(Transport.TELEGRAM)
    Message.objects.filter(conversation=chat).update(
        media=[{"kind": "media", "media_kind": "sticker", "unique_id": "S9", "sticker_set_name": "Gnomes"}]
    )
    StickerAccess.objects.create(
        agent=chat.agent, saved_stickers=[{"set": "Gnomes", "name": "👋", "unique_id": "S9"}]
    )
    assert _save(chat, unique_id="S9", description="a gnome waving").outcome == Outcome.ALREADY
    assert not GatewayRequest.objects.exists()
    assert MediaDescription.objects.get(unique_id="S9").sticker_set_name == "Gnomes"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"message_id": 6}, "message #6 is not in this conversation"),
        ({"unique_id": "X1"}, "message #5 holds no media 'X1'"),
        (
            {"unique_id": "V1"},
            "a voice note cannot be saved to the library: only photos, stickers, GIFs and animations",
        ),
        ({"description": "   "}, "write what the media shows"),
    ],
)
def test_bad_input_is_refused_naming_what_is_wrong_and_changes_nothing(media_root, kwargs, expected):
    chat = _chat(Transport.SANDBOX)
    with pytest.raises(ValidationError) as raised:
        _save(chat, **kwargs)
    assert expected in " ".join(raised.value.messages)
    if "description" in kwargs:
        assert list(raised.value.message_dict) == ["description"]
    assert not LibraryItem.objects.exists() and not GatewayRequest.objects.exists()
    assert not MediaDescription.objects.get(unique_id="P1").is_curated
    assert not ActivityEvent.objects.filter(conversation_id=chat.pk).exists()


def test_a_sandbox_photo_that_was_never_downloaded_cannot_become_a_library_item(media_root):
    chat = _chat(Transport.SANDBOX)
    (media_root / "sandbox" / "p1.jpg").unlink()
    with pytest.raises(ValidationError, match="the file of media P1 is not stored"):
        _save(chat)
    assert not LibraryItem.objects.exists()
    assert not MediaDescription.objects.get(unique_id="P1").is_curated  # one transaction: nothing half-done
