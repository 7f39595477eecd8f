"""Inbound updates, history for the reconciler, and the connection's lifecycle."""

from __future__ import annotations

import logging

import pytest
from telethon import utils
from telethon.tl import functions, types

from agents.models import TelegramUpdateState
from conversations.transport.base import (
    AuthError,
    MessageEdited,
    NewMessage,
    PartnerTyping,
    ReactionsChanged,
    TransportError,
)
from telegram import TelethonTransport

from .conftest import GATEWAY, run
from .doubles import DATE, ME_ID, FakeTelegramClient, user

ANN = 501
GROUP = utils.get_peer_id(types.PeerChannel(901))


def test_connect_reports_the_account(transport):
    assert (transport.me.user_id, transport.me.username, transport.me.name) == (ME_ID, "Heidi_Bot", "Heidi")


def test_updates_are_queued_and_drained_oldest_first(transport, fake_client):
    first = types.UpdateNewMessage(
        message=types.Message(id=1, peer_id=types.PeerUser(ANN), date=DATE, message="one"), pts=1, pts_count=1
    )
    first._entities = {ANN: user(ANN)}
    mine = types.UpdateNewMessage(
        message=types.Message(id=2, peer_id=types.PeerUser(ANN), date=DATE, message="from phone", out=True),
        pts=2,
        pts_count=1,
    )
    reaction = types.UpdateMessageReactions(
        peer=types.PeerUser(ANN), msg_id=2, reactions=types.MessageReactions(results=[])
    )
    for update in (first, mine, reaction):
        run(fake_client.dispatch, update)
    drained = run(transport.poll_updates)
    assert [type(u) for u in drained] == [NewMessage, NewMessage, ReactionsChanged]
    assert drained[0].message.sender_name == "Ann"
    assert drained[1].message.is_outgoing
    assert run(transport.poll_updates) == []


def test_a_login_code_from_telegram_a_bots_message_and_typing_arrive_as_such(transport, fake_client):
    service = types.User(id=777000, access_hash=1, first_name="Telegram", verified=True)
    bot = types.User(
        id=602, access_hash=2, first_name="Helper", username="helper_bot", bot=True, bot_info_version=1
    )
    login = types.UpdateShortMessage(
        id=4,
        user_id=777000,
        message="Login code: 52841. Do not give this code to anyone",
        pts=4,
        pts_count=1,
        date=DATE,
    )
    login._entities = {777000: service}
    beep = types.UpdateNewMessage(
        message=types.Message(id=5, peer_id=types.PeerUser(602), date=DATE, message="beep"),
        pts=5,
        pts_count=1,
    )
    beep._entities = {602: bot}
    typing = types.UpdateUserTyping(user_id=ANN, action=types.SendMessageTypingAction())
    for update in (login, beep, typing):
        run(fake_client.dispatch, update)

    first, second, third = run(transport.poll_updates)
    assert (first.message.peer_id, first.message.sender_id, first.message.sender_is_bot) == (
        777000,
        777000,
        False,
    )
    assert (second.message.sender_name, second.message.sender_is_bot) == ("Helper", True)
    assert third == PartnerTyping(peer_id=ANN, seconds=6.0)


def test_a_queued_update_calls_on_update_so_an_idle_gateway_polls_at_once(transport, fake_client):
    woken: list[int] = []
    transport.on_update = lambda: woken.append(len(transport._queue))
    update = types.UpdateNewMessage(
        message=types.Message(id=3, peer_id=types.PeerUser(ANN), date=DATE, message="hi"), pts=3, pts_count=1
    )
    update._entities = {ANN: user(ANN)}
    run(fake_client.dispatch, update)
    assert woken == [1]  # called once the update is queued, not before
    assert len(run(transport.poll_updates)) == 1


def test_reply_to_a_message_sent_from_another_device_is_a_reply_to_the_agent(transport, fake_client):
    mine = types.Message(id=40, peer_id=types.PeerChannel(901), date=DATE, message="me", out=True)
    reply = types.Message(
        id=41,
        peer_id=types.PeerChannel(901),
        from_id=types.PeerUser(ANN),
        date=DATE,
        message="re",
        reply_to=types.MessageReplyHeader(reply_to_msg_id=40),
    )
    for message in (mine, reply):
        run(fake_client.dispatch, types.UpdateNewChannelMessage(message=message, pts=1, pts_count=1))
    drained = run(transport.poll_updates)
    assert drained[1].message.reply_to_agent and drained[1].message.peer_id == GROUP


def test_sticker_set_title_is_looked_up_once_and_cached(transport, fake_client):
    sticker = types.MessageMediaDocument(
        document=types.Document(
            id=9,
            access_hash=1,
            file_reference=b"",
            date=DATE,
            mime_type="application/x-tgsticker",
            size=1,
            dc_id=2,
            attributes=[
                types.DocumentAttributeSticker(
                    alt="🐸", stickerset=types.InputStickerSetID(id=3, access_hash=4)
                )
            ],
        )
    )
    fake_client.answer(
        types.messages.StickerSet(
            set=types.StickerSet(
                id=3, access_hash=4, title="Mr Ribbit", short_name="MrRibbit", count=1, hash=0
            ),
            packs=[],
            keywords=[],
            documents=[],
        )
    )
    for mid in (1, 2):
        message = types.Message(id=mid, peer_id=types.PeerUser(ANN), date=DATE, message="", media=sticker)
        run(fake_client.dispatch, types.UpdateNewMessage(message=message, pts=mid, pts_count=1))
    items = [u.message.media[0] for u in run(transport.poll_updates)]
    assert {(i.sticker_set_name, i.sticker_set_title, i.sticker_format) for i in items} == {
        ("MrRibbit", "Mr Ribbit", "animated")
    }
    assert len(fake_client.of_type(functions.messages.GetStickerSetRequest)) == 1


def test_history_since_id_pages_forward_in_order(transport, fake_client):
    messages = [
        types.Message(id=i, peer_id=types.PeerUser(ANN), date=DATE, message=f"m{i}") for i in (13, 12, 11)
    ]
    fake_client.answer(types.messages.Messages(messages=messages, topics=[], chats=[], users=[user(ANN)]))
    got = run(transport.history, ANN, since_id=10, limit=3)
    assert [m.message_id for m in got] == [11, 12, 13]
    (request,) = fake_client.of_type(functions.messages.GetHistoryRequest)
    assert (request.min_id, request.offset_id, request.add_offset, request.limit) == (10, 11, -3, 3)


def test_lost_connection_is_reported_for_the_supervisor(transport, fake_client):
    fake_client.connected = False
    with pytest.raises(TransportError):
        run(transport.poll_updates)


def test_a_revoked_session_at_connect_is_an_auth_error(logged_in):
    client = FakeTelegramClient()
    client.authorized = False
    transport = TelethonTransport(logged_in, gateway_id=GATEWAY, client_factory=lambda *a: client)
    with pytest.raises(AuthError) as exc:
        run(transport.connect)
    assert "telegram_login Heidi" in str(exc.value)


def test_not_logged_in_names_the_fix(tg_agent):
    transport = TelethonTransport(
        tg_agent, gateway_id=GATEWAY, client_factory=lambda *a: FakeTelegramClient()
    )
    with pytest.raises(AuthError) as exc:
        run(transport.connect)
    assert "agents/Heidi: not logged in to Telegram: run python manage.py telegram_login Heidi" in str(
        exc.value
    )


def test_update_state_is_saved_on_disconnect(transport, fake_client):
    state = types.updates.State(pts=120, qts=3, date=DATE, seq=9, unread_count=0)
    fake_client.session.set_update_state(0, state)
    run(transport.disconnect)
    row = TelegramUpdateState.objects.get(agent=transport.agent, entity_id=0)
    assert (row.pts, row.qts, row.seq) == (120, 3, 9)


def test_the_factory_builds_a_telethon_transport_that_meets_the_protocol(logged_in):
    from conversations.transport.base import Transport
    from engine.transports import transport_for

    transport = transport_for(logged_in, gateway_id=GATEWAY)
    assert isinstance(transport, TelethonTransport) and isinstance(transport, Transport)
    assert transport.gateway_id == GATEWAY


def test_reconnect_closes_the_old_client_and_opens_a_new_one(logged_in):
    clients = []

    def factory(session, api_id, api_hash):
        clients.append(FakeTelegramClient(session))
        return clients[-1]

    transport = TelethonTransport(logged_in, gateway_id=GATEWAY, client_factory=factory)
    run(transport.connect)
    run(transport.connect)
    assert [c.connected for c in clients] == [False, True]
    assert transport.client is clients[1]


def gif_from_a_newer_layer() -> types.MessageMediaDocument:
    # A field the code reads as required (the video's duration) arrives empty, as when a newer
    # layer makes it optional: normalising this message fails.
    return types.MessageMediaDocument(
        document=types.Document(
            id=9,
            access_hash=1,
            file_reference=b"",
            date=DATE,
            mime_type="video/mp4",
            size=1,
            dc_id=2,
            attributes=[
                types.DocumentAttributeAnimated(),
                types.DocumentAttributeVideo(duration=None, w=1, h=1),
            ],
        )
    )


def test_an_unreadable_message_is_logged_and_kept_as_unsupported_content(transport, fake_client, caplog):
    message = types.Message(
        id=77, peer_id=types.PeerUser(ANN), date=DATE, message="look", media=gif_from_a_newer_layer()
    )
    with caplog.at_level(logging.ERROR, logger="telegram.client"):
        run(fake_client.dispatch, types.UpdateNewMessage(message=message, pts=1, pts_count=1))
    (update,) = run(transport.poll_updates)
    assert isinstance(update, NewMessage)
    kept = update.message
    assert (kept.peer_id, kept.message_id, kept.sender_id, kept.text) == (ANN, 77, ANN, "look")
    assert [(m.media_kind, m.extra) for m in kept.media] == [
        ("other", {"type": "unsupported", "tl_type": "MessageMediaDocument"})
    ]
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    text = record.getMessage()
    assert "agents/Heidi" in text and "UpdateNewMessage with Message" in text
    assert f"peer {ANN}, message 77" in text and record.exc_info is not None


def test_an_unreadable_edit_is_kept_as_an_edit(transport, fake_client):
    message = types.Message(
        id=78, peer_id=types.PeerUser(ANN), date=DATE, message="", media=gif_from_a_newer_layer()
    )
    run(fake_client.dispatch, types.UpdateEditMessage(message=message, pts=1, pts_count=1))
    (update,) = run(transport.poll_updates)
    assert isinstance(update, MessageEdited) and update.message.message_id == 78


def test_an_unreadable_reaction_update_is_logged_and_the_handler_goes_on(transport, fake_client, caplog):
    broken = types.UpdateMessageReactions(
        peer=types.PeerUser(ANN),
        msg_id=5,
        reactions=types.MessageReactions(
            results=[],
            recent_reactions=[
                types.MessagePeerReaction(peer_id=None, date=DATE, reaction=types.ReactionEmoji("👍"))
            ],
        ),
    )
    fine = types.UpdateNewMessage(
        message=types.Message(id=6, peer_id=types.PeerUser(ANN), date=DATE, message="hi"), pts=2, pts_count=1
    )
    with caplog.at_level(logging.ERROR, logger="telegram.client"):
        run(fake_client.dispatch, broken)
        run(fake_client.dispatch, fine)
    assert [u.message.message_id for u in run(transport.poll_updates)] == [6]
    assert f"UpdateMessageReactions with no message) in peer {ANN}, message 5" in caplog.text


def test_history_keeps_an_unreadable_message_instead_of_failing_the_page(transport, fake_client):
    messages = [
        types.Message(
            id=12, peer_id=types.PeerUser(ANN), date=DATE, message="", media=gif_from_a_newer_layer()
        ),
        types.Message(id=11, peer_id=types.PeerUser(ANN), date=DATE, message="fine"),
    ]
    fake_client.answer(types.messages.Messages(messages=messages, topics=[], chats=[], users=[user(ANN)]))
    got = run(transport.history, ANN, since_id=10, limit=5)
    assert [(m.message_id, m.media[0].media_kind if m.media else None) for m in got] == [
        (11, None),
        (12, "other"),
    ]
