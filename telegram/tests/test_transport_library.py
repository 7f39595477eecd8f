"""The media library on Telegram: Saved Messages listed as library items, and sent again by id."""

from __future__ import annotations

import pytest
from telethon.tl import functions, types

from conversations.transport.base import LibraryRef, PermanentError

from .conftest import run
from .doubles import DATE

ANN = 501


def photo_message(message_id: int, photo_id: int, reference: bytes = b"ref") -> types.Message:
    photo = types.Photo(id=photo_id, access_hash=7, file_reference=reference, date=DATE, sizes=[], dc_id=2)
    return types.Message(
        id=message_id,
        peer_id=types.PeerUser(1),
        date=DATE,
        message="",
        media=types.MessageMediaPhoto(photo=photo),
    )


def video_message(message_id: int, doc_id: int) -> types.Message:
    doc = types.Document(
        id=doc_id,
        access_hash=8,
        file_reference=b"v",
        date=DATE,
        mime_type="video/mp4",
        size=10,
        dc_id=2,
        attributes=[],
    )
    return types.Message(
        id=message_id,
        peer_id=types.PeerUser(1),
        date=DATE,
        message="",
        media=types.MessageMediaDocument(document=doc),
    )


def messages(*items) -> types.messages.Messages:
    return types.messages.Messages(messages=list(items), topics=[], chats=[], users=[])


def test_saved_messages_media_are_listed_with_their_ids_and_kinds(transport, fake_client):
    text_only = types.Message(id=3, peer_id=types.PeerUser(1), date=DATE, message="a note")
    fake_client.answer(messages(photo_message(5, 111), text_only, video_message(4, 222)))

    items = run(transport.saved_media)

    assert items == [
        LibraryRef("111", "photo", saved_message_id=5, mime="image/jpeg"),
        LibraryRef("222", "video", saved_message_id=4, mime="video/mp4"),
    ]
    (request,) = fake_client.of_type(functions.messages.GetHistoryRequest)
    assert request.peer == types.InputPeerSelf()


def test_a_library_photo_is_sent_with_a_fresh_file_reference_and_the_random_id(transport, fake_client):
    sent = types.UpdateShortSentMessage(id=90, pts=1, pts_count=1, date=DATE, out=True)
    fake_client.answer(messages(photo_message(5, 111, reference=b"fresh")), sent)

    result = run(
        transport.send_media, ANN, LibraryRef("111", "photo", saved_message_id=5), random_id=77, reply_to=3
    )

    assert result.message_id == 90
    (send,) = fake_client.of_type(functions.messages.SendMediaRequest)
    assert send.media.id == types.InputPhoto(id=111, access_hash=7, file_reference=b"fresh")
    assert (send.random_id, send.reply_to.reply_to_msg_id) == (77, 3)


def test_an_item_gone_from_saved_messages_fails_permanently(transport, fake_client):
    fake_client.answer(messages(photo_message(5, 999)))
    with pytest.raises(PermanentError) as exc:
        run(transport.send_media, ANN, LibraryRef("111", "photo", saved_message_id=5), random_id=1)
    assert exc.value.reason == "MEDIA_NOT_FOUND"
    assert not fake_client.of_type(functions.messages.SendMediaRequest)
