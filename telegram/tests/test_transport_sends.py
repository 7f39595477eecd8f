"""Outbound operations of TelethonTransport against a client double at the network edge."""

from __future__ import annotations

import pytest
from telethon import errors
from telethon.tl import functions, types

from conversations.transport.base import FloodWait, PermanentError, SentMessage, StickerRef, TransportError

from .conftest import run
from .doubles import DATE, is_send, telegram_send

ANN = 501


def short_sent(message_id=50):
    return types.UpdateShortSentMessage(id=message_id, pts=1, pts_count=1, date=DATE, out=True)


def test_text_is_sent_raw_with_entities_no_preview_reply_and_random_id(transport, fake_client):
    fake_client.answer(short_sent(50))
    sent = run(transport.send_text, ANN, "**bold** __it__ ~~gone~~ `x`", random_id=123, reply_to=9)
    assert sent == SentMessage(peer_id=ANN, message_id=50, date=DATE, random_id=123)
    (request,) = fake_client.of_type(functions.messages.SendMessageRequest)
    assert request.message == "bold it gone x"
    assert request.no_webpage is True
    assert request.random_id == 123
    assert request.reply_to.reply_to_msg_id == 9
    assert request.peer == types.InputPeerUser(ANN, ANN * 3)
    kinds = [type(e) for e in request.entities]
    assert kinds == [
        types.MessageEntityBold,
        types.MessageEntityItalic,
        types.MessageEntityStrike,
        types.MessageEntityCode,
    ]
    assert (request.entities[0].offset, request.entities[0].length) == (0, 4)


def test_group_send_result_is_read_from_update_message_id(transport, fake_client):
    fake_client.answer(telegram_send(fake_client, message_id=700))
    sent = run(transport.send_text, -33, "hello", random_id=5)
    assert (sent.peer_id, sent.message_id, sent.random_id) == (-33, 700, 5)


def test_retry_after_a_lost_answer_reuses_the_random_id_and_sends_once(transport, fake_client):
    respond = telegram_send(fake_client, message_id=800)

    def sent_but_connection_dropped(request):
        respond(request)  # Telegram created the message...
        raise ConnectionError("connection reset")  # ...but the answer never arrived

    fake_client.answer(sent_but_connection_dropped, respond)
    with pytest.raises(TransportError) as first:
        run(transport.send_text, ANN, "only once", random_id=42)
    assert not isinstance(first.value, (PermanentError, FloodWait))
    sent = run(transport.send_text, ANN, "only once", random_id=42)
    sends = [r for r in fake_client.requests if is_send(r)]
    assert [r.random_id for r in sends] == [42, 42]
    assert sent.message_id == 800
    assert len(fake_client.sent_by_random_id) == 1


def test_random_id_duplicate_returns_the_earlier_message_from_history(transport, fake_client):
    earlier = types.Message(id=77, peer_id=types.PeerUser(ANN), date=DATE, message="hi there", out=True)
    history = types.messages.Messages(messages=[earlier], topics=[], chats=[], users=[])
    fake_client.answer(errors.RandomIdDuplicateError(request=None), history)
    sent = run(transport.send_text, ANN, "hi there", random_id=9)
    assert (sent.message_id, sent.random_id) == (77, 9)
    assert len([r for r in fake_client.requests if is_send(r)]) == 1


def sticker_set(file_reference=b"f"):
    docs = [
        types.Document(
            id=1000 + i,
            access_hash=5,
            file_reference=file_reference,
            date=DATE,
            mime_type="image/webp",
            size=10,
            dc_id=2,
            attributes=[
                types.DocumentAttributeSticker(
                    alt=alt, stickerset=types.InputStickerSetID(id=3, access_hash=4)
                )
            ],
        )
        for i, alt in enumerate(["😀", "🐸"])
    ]
    return types.messages.StickerSet(
        set=types.StickerSet(id=3, access_hash=4, title="Mr Ribbit", short_name="MrRibbit", count=2, hash=0),
        packs=[],
        keywords=[],
        documents=docs,
    )


def test_sticker_by_set_and_name_uses_get_sticker_set_once_per_session(transport, fake_client):
    fake_client.answer(sticker_set(), short_sent(60), short_sent(61))
    ref = StickerRef(set_short_name="MrRibbit", name="🐸")
    run(transport.send_sticker, ANN, ref, random_id=1)
    run(transport.send_sticker, ANN, ref, random_id=2, reply_to=4)
    (lookup,) = fake_client.of_type(functions.messages.GetStickerSetRequest)
    assert lookup.stickerset == types.InputStickerSetShortName("MrRibbit")
    first, second = fake_client.of_type(functions.messages.SendMediaRequest)
    assert first.media.id == types.InputDocument(id=1001, access_hash=5, file_reference=b"f")
    assert (first.random_id, second.random_id, second.reply_to.reply_to_msg_id) == (1, 2, 4)


def test_an_expired_sticker_file_reference_refetches_the_set_and_sends_once(transport, fake_client):
    expired = errors.FileReferenceExpiredError(request=None)
    fake_client.answer(sticker_set(), short_sent(60), expired, sticker_set(b"new"), short_sent(61))
    ref = StickerRef(set_short_name="MrRibbit", name="🐸")
    run(transport.send_sticker, ANN, ref, random_id=1)
    sent = run(transport.send_sticker, ANN, ref, random_id=2)
    assert sent.message_id == 61
    assert len(fake_client.of_type(functions.messages.GetStickerSetRequest)) == 2
    sends = fake_client.of_type(functions.messages.SendMediaRequest)
    assert [(s.random_id, s.media.id.file_reference) for s in sends] == [(1, b"f"), (2, b"f"), (2, b"new")]


def test_a_sticker_reference_that_stays_expired_is_transient_and_the_retry_looks_the_set_up_again(
    transport, fake_client
):
    expired = errors.FileReferenceExpiredError
    fake_client.answer(sticker_set(), expired(request=None), sticker_set(), expired(request=None))
    ref = StickerRef(set_short_name="MrRibbit", name="🐸")
    with pytest.raises(TransportError) as exc:
        run(transport.send_sticker, ANN, ref, random_id=1)
    assert not isinstance(exc.value, (PermanentError, FloodWait))
    assert "FILE_REFERENCE_EXPIRED" in str(exc.value)
    fake_client.answer(sticker_set(b"new"), short_sent(62))
    assert run(transport.send_sticker, ANN, ref, random_id=1).message_id == 62
    assert len(fake_client.of_type(functions.messages.GetStickerSetRequest)) == 3


def test_unknown_sticker_name_is_permanent(transport, fake_client):
    fake_client.answer(sticker_set())
    with pytest.raises(PermanentError) as exc:
        run(transport.send_sticker, ANN, StickerRef(set_short_name="MrRibbit", name="🦄"), random_id=1)
    assert exc.value.reason == "STICKER_NOT_FOUND"
    assert "MrRibbit" in str(exc.value)


def test_resolve_sticker_set_lists_stickers(transport, fake_client):
    fake_client.answer(sticker_set())
    info = run(transport.resolve_sticker_set, "MrRibbit")
    assert (info.short_name, info.title) == ("MrRibbit", "Mr Ribbit")
    assert [(s.name, s.unique_id) for s in info.stickers] == [("😀", "1000"), ("🐸", "1001")]


def test_react_typing_read_block_unblock_requests(transport, fake_client):
    run(transport.react, ANN, 12, "👍")
    run(transport.set_typing, ANN)
    run(transport.set_typing, ANN, False)
    run(transport.mark_read, ANN, 12)
    run(transport.block, ANN)
    run(transport.unblock, ANN)
    react, typing, cancel, read, read_reactions, block, unblock = fake_client.requests
    assert (react.msg_id, react.reaction) == (12, [types.ReactionEmoji("👍")])
    assert isinstance(typing.action, types.SendMessageTypingAction)
    assert isinstance(cancel.action, types.SendMessageCancelAction)
    assert isinstance(read, functions.messages.ReadHistoryRequest) and read.max_id == 12
    assert isinstance(read_reactions, functions.messages.ReadReactionsRequest)
    assert isinstance(block, functions.contacts.BlockRequest)
    assert isinstance(unblock, functions.contacts.UnblockRequest)


def test_mark_read_in_a_supergroup_uses_the_channel_request(transport, fake_client):
    run(transport.mark_read, -1000000000901, 30)
    assert isinstance(fake_client.requests[0], functions.channels.ReadHistoryRequest)
    assert fake_client.requests[0].channel == types.InputChannel(901, 901 * 5)


def test_delete_history_only_in_dms(transport, fake_client):
    fake_client.answer(types.messages.AffectedHistory(pts=1, pts_count=1, offset=0))
    run(transport.delete_history, ANN)
    (request,) = fake_client.requests
    assert isinstance(request, functions.messages.DeleteHistoryRequest)
    with pytest.raises(PermanentError) as exc:
        run(transport.delete_history, -33)
    assert exc.value.reason == "NOT_A_DM"
    assert len(fake_client.requests) == 1


def test_download_media_saves_into_the_media_store(transport, fake_client, telegram_settings):
    photo = types.Photo(id=42, access_hash=1, file_reference=b"r", date=DATE, sizes=[], dc_id=2)
    message = types.Message(
        id=3, peer_id=types.PeerUser(ANN), date=DATE, message="", media=types.MessageMediaPhoto(photo=photo)
    )
    fake_client.answer(types.messages.Messages(messages=[message], topics=[], chats=[], users=[]))
    dest = telegram_settings.MEDIA_ROOT / "telegram"
    path = run(transport.download_media, ANN, 3, dest)
    assert path == dest / "42.jpg" and path.read_bytes() == b"media bytes"
