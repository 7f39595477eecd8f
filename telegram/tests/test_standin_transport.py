"""`TelethonTransport` with the real Telethon client, in this process, against the loopback stand-in.

Each test runs one coroutine on one loop (Telethon's client is bound to the loop it connected on);
the database is reached through the transport's own sync_to_async calls.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from telethon.tl import types

from agents.management.commands.telegram_login import make_client
from agents.telethon_session import open_session_for
from cindy_site.testing.mtproto import StandIn
from cindy_site.testing.mtproto.media import image_bytes
from conversations.transport.base import (
    LibraryRef,
    MessageEdited,
    MessagesDeleted,
    NewMessage,
    ReactionsChanged,
    StickerRef,
)
from telegram import TelethonTransport

from .conftest import GATEWAY

PHONE = "+9996641234"  # code 44444


@pytest.fixture(scope="module")
def standin():
    server = StandIn().start()
    yield server
    server.stop()


@pytest.fixture
def world(standin, tg_agent, settings, tmp_path):
    key_path = tmp_path / "standin.pub.pem"
    key_path.write_bytes(standin.key.public_pem)
    settings.CINDY_TELEGRAM_SERVER = standin.address
    settings.CINDY_TELEGRAM_SERVER_KEY = str(key_path)
    tg_agent.phone = PHONE
    tg_agent.save(update_fields=["phone"])
    me = standin.run(standin.world.user_by_phone, PHONE) or standin.run(
        standin.world.create_user, phone=PHONE, first_name="Heidi", username="heidi"
    )
    bob = standin.run(standin.world.user_by_phone, "+9996641111") or standin.run(
        standin.world.create_user, phone="+9996641111", first_name="Bob", username="bob"
    )
    standin.random_id_duplicate_error = False
    return standin, tg_agent, me, bob


async def connected(agent) -> TelethonTransport:
    """Log the agent in through the login command's client, then connect the transport."""
    session = await sync_to_async(open_session_for)(agent, GATEWAY)
    client = make_client(session, settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH)
    await client.connect()
    await client.send_code_request(PHONE)
    me = await client.sign_in(phone=PHONE, code="44444")
    await session.flush_async()
    await client.disconnect()
    agent.telegram_user_id = me.id
    await sync_to_async(agent.save)(update_fields=["telegram_user_id"])
    transport = TelethonTransport(agent, gateway_id=GATEWAY)
    await transport.connect()
    return transport


async def next_updates(transport: TelethonTransport, kind: type) -> list:
    for _ in range(200):
        found = [u for u in await transport.poll_updates() if isinstance(u, kind)]
        if found:
            return found
        await asyncio.sleep(0.02)  # the update arrives over the socket; poll_updates never blocks
    raise AssertionError(f"no {kind.__name__} arrived")


def test_a_send_repeated_after_random_id_duplicate_finds_the_first_message(world):
    standin, agent, me, bob = world
    standin.random_id_duplicate_error = True

    async def run():
        transport = await connected(agent)
        first = await transport.send_text(bob.id, "only once", random_id=991)
        again = await transport.send_text(bob.id, "only once", random_id=991)
        await transport.disconnect()
        return first, again

    first, again = async_to_sync(run)()
    assert again.message_id == first.message_id
    assert [c.error for c in standin.calls_of("messages.sendMessage")][-2:] == ["", "RANDOM_ID_DUPLICATE"]
    texts = standin.run(lambda: [m.text for m in standin.world.history(standin.world.dm_key(me.id, bob.id))])
    assert texts.count("only once") == 1


def test_a_sticker_with_an_expired_file_reference_is_sent_after_fetching_the_set_again(world):
    standin, agent, me, bob = world

    async def run():
        transport = await connected(agent)
        info = await transport.resolve_sticker_set("CindyStandIn")

        def expire():
            for doc in standin.world.documents.values():
                doc.file_reference = b"ref-2"

        standin.run(expire)
        smile = next(s for s in info.stickers if s.name == "😀")
        sent = await transport.send_sticker(
            bob.id, StickerRef("CindyStandIn", "😀", smile.unique_id), random_id=992
        )
        await transport.disconnect()
        return sent

    sent = async_to_sync(run)()
    assert [c.error for c in standin.calls_of("messages.sendMedia")][-2:] == ["FILE_REFERENCE_EXPIRED", ""]
    message = standin.run(standin.world.find, standin.world.dm_key(me.id, bob.id), sent.message_id)
    assert isinstance(message.media, types.MessageMediaDocument) and message.random_id == 992


def test_inbound_messages_reactions_history_details_and_media_read_through_the_transport(world, tmp_path):
    standin, agent, me, bob = world
    dm = standin.world.dm_key(me.id, bob.id)
    group = standin.run(standin.world.create_group, title="Book club", member_ids=[me.id, bob.id])

    async def run():
        transport = await connected(agent)
        photo = types.MessageMediaPhoto(photo=standin.world.photo)
        standin.run(standin.world.send, bob.id, dm, "a picture for you", media=photo)
        [new] = await next_updates(transport, NewMessage)
        sent = await transport.send_text(bob.id, "thanks!", random_id=993)
        standin.run(standin.world.react, bob.id, dm, sent.message_id, "❤")
        [reacted] = await next_updates(transport, ReactionsChanged)
        await transport.react(bob.id, new.message.message_id, "👍")
        await transport.mark_read(bob.id, new.message.message_id)
        history = await transport.history(bob.id, since_id=new.message.message_id - 1)
        details = await transport.get_details(-group.id)
        dialogs = await transport.dialogs()
        path = await transport.download_media(bob.id, new.message.message_id, tmp_path / "media")
        muted, blocked = await transport.is_muted(bob.id), await transport.is_blocked(bob.id)
        await transport.disconnect()
        return new.message, reacted, history, details, dialogs, path, muted, blocked

    new, reacted, history, details, dialogs, path, muted, blocked = async_to_sync(run)()
    assert (new.sender_id, new.text, new.media[0].media_kind) == (bob.id, "a picture for you", "photo")
    assert [r.emoji for r in reacted.reactions] == ["❤"]
    assert [(m.text, m.is_outgoing) for m in history] == [("a picture for you", False), ("thanks!", True)]
    assert (details.title, details.participants_count) == ("Book club", 2)
    assert {d.peer_id for d in dialogs} >= {bob.id, -group.id}
    assert path.read_bytes() == standin.world.files[standin.world.photo.id]
    assert (muted, blocked) == (False, False)
    message = standin.run(standin.world.find, dm, new.message_id)
    assert message.reactions == {me.id: "👍"}
    assert standin.world.users[me.id].read_max[dm] == new.message_id


def test_a_sticker_an_edit_and_a_deletion_from_the_other_side_arrive_as_updates(world):
    standin, agent, me, bob = world
    dm = standin.world.dm_key(me.id, bob.id)

    async def run():
        transport = await connected(agent)
        sticker = types.MessageMediaDocument(document=next(iter(standin.world.documents.values())))
        standin.run(standin.world.send, bob.id, dm, "", media=sticker)
        [got_sticker] = await next_updates(transport, NewMessage)
        text, _pts, _new = standin.run(standin.world.send, bob.id, dm, "see you at 5")
        await next_updates(transport, NewMessage)
        standin.run(standin.world.edit, bob.id, dm, text.id, "see you at 6")
        [edited] = await next_updates(transport, MessageEdited)
        standin.run(standin.world.delete, bob.id, dm, [text.id])
        [deleted] = await next_updates(transport, MessagesDeleted)
        await transport.disconnect()
        return got_sticker.message, edited.message, deleted

    sticker, edited, deleted = async_to_sync(run)()
    item = sticker.media[0]
    assert (item.media_kind, item.sticker_set_name, item.sticker_set_title) == (
        "sticker",
        "CindyStandIn",
        "Cindy stand-in stickers",
    )
    assert (edited.text, edited.edited_at is not None) == ("see you at 6", True)
    assert deleted.message_ids == (edited.message_id,)


def test_a_library_file_uploaded_in_the_admin_is_sent_as_a_photo(world, settings, tmp_path):
    """An operator's upload has no Saved Messages copy: the transport uploads it with the send."""
    standin, agent, me, bob = world
    settings.MEDIA_ROOT = str(tmp_path)
    data = image_bytes("canal", size=(64, 48), color="blue", fmt="PNG")
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "canal.png").write_bytes(data)
    item = LibraryRef("libcanal", "photo", file="library/canal.png", mime="image/png")

    async def run():
        transport = await connected(agent)
        sent = await transport.send_media(bob.id, item, random_id=4242)
        await transport.disconnect()
        return sent

    sent = async_to_sync(run)()
    last = standin.run(lambda: standin.world.history(standin.world.dm_key(me.id, bob.id))[-1])
    assert last.id == sent.message_id and isinstance(last.media, types.MessageMediaPhoto)
    assert sent.media_unique_id == str(last.media.photo.id)
    assert standin.run(lambda: standin.world.files[last.media.photo.id]) == data
    assert [(s.w, s.h) for s in last.media.photo.sizes] == [(64, 48)]
