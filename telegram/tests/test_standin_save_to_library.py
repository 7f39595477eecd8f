"""Saving a chat's photo or sticker to a Telegram agent's library: the `save_to_library` gateway request,
run by the engine through `TelethonTransport` (real Telethon) against the loopback stand-in."""

from __future__ import annotations

from asgiref.sync import async_to_sync, sync_to_async
from telethon.tl import types

from agents.models import GatewayRequest
from cindy_site.clock import now
from cindy_site.testing.mtproto.media import add_photo, image_bytes, sticker_document
from conversations.transport.base import NewMessage, PermanentError
from engine.requests import execute_request
from media_catalog.models import LibraryItem, MediaDescription

from . import test_standin_transport as base
from .test_standin_transport import connected, next_updates

standin = base.standin
world = base.world


def _saved(standin, me_id: int) -> list:
    """The media ids in the account's Saved Messages (its chat with itself), oldest first."""

    def read():
        key = standin.world.dm_key(me_id, me_id)
        return [
            (getattr(m.media, "photo", None) or getattr(m.media, "document", None)).id
            for m in standin.world.history(key)
            if m.media is not None
        ]

    return standin.run(read)


def _request(agent, peer_id: int, message_id: int, unique_id: str) -> GatewayRequest:
    return GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.SAVE_TO_LIBRARY,
        params={
            "peer_id": peer_id,
            "message_id": message_id,
            "unique_id": unique_id,
            "description": "a blue kite over a beach",
        },
        created=now(),
    )


def test_a_photo_from_a_chat_goes_to_saved_messages_as_the_same_photo_once(world):
    standin, agent, me, bob = world
    photo = standin.run(
        add_photo,
        standin.world,
        image_bytes("kite", size=(64, 48), color="blue", fmt="JPEG"),
        width=64,
        height=48,
    )
    before = _saved(standin, me.id)
    # edited by an operator after the request was made: the item takes the catalog's curated text
    MediaDescription.objects.create(
        unique_id=str(photo.id),
        kind="photo",
        description="a blue kite at noon",
        source="curated",
        status="curated",
    )

    async def run():
        transport = await connected(agent)
        dm = standin.world.dm_key(me.id, bob.id)
        standin.run(standin.world.send, bob.id, dm, "look", media=types.MessageMediaPhoto(photo=photo))
        [new] = await next_updates(transport, NewMessage)
        message_id = new.message.message_id
        first = await execute_request(
            await sync_to_async(_request)(agent, bob.id, message_id, str(photo.id)), transport
        )
        again = await execute_request(
            await sync_to_async(_request)(agent, bob.id, message_id, str(photo.id)), transport
        )
        await transport.disconnect()
        return new.message.media[0].unique_id, first, again

    unique_id, (first, error), (again, again_error) = async_to_sync(run)()
    assert unique_id == str(photo.id) and error == "" and again_error == ""
    assert _saved(standin, me.id) == [*before, photo.id]  # the same photo, and only once
    assert first["already"] is False and again["already"] is True
    assert again["saved_message_id"] == first["saved_message_id"]
    item = LibraryItem.objects.get(agent=agent, unique_id=str(photo.id))
    assert (item.kind, item.saved_message_id, item.file.name) == ("photo", first["saved_message_id"], "")
    assert item.description == "a blue kite at noon"
    sends = [c for c in standin.calls_of("messages.sendMedia") if c.error == ""]
    assert len(sends) == 1


def test_media_that_is_not_in_the_message_is_refused_and_nothing_is_saved(world):
    standin, agent, me, bob = world
    sticker = sticker_document(standin.world, "CindyStandIn", "👍")
    before = _saved(standin, me.id)

    async def run():
        transport = await connected(agent)
        dm = standin.world.dm_key(me.id, bob.id)
        standin.run(standin.world.send, bob.id, dm, "", media=types.MessageMediaDocument(document=sticker))
        [new] = await next_updates(transport, NewMessage)
        message_id = new.message.message_id
        try:
            await transport.save_to_library(bob.id, message_id, "12345")
        except PermanentError as exc:
            wrong = exc
        result = await execute_request(
            await sync_to_async(_request)(agent, bob.id, message_id + 1000, str(sticker.id)), transport
        )
        await transport.disconnect()
        return wrong, result

    wrong, (_result, error) = async_to_sync(run)()
    assert wrong.reason == "MEDIA_NOT_FOUND" and "does not hold media 12345" in str(wrong)
    assert "has no message" in error
    assert _saved(standin, me.id) == before
    assert not LibraryItem.objects.filter(agent=agent).exists()


def test_a_saved_library_photo_is_fetched_from_saved_messages_for_the_profile(world, settings, tmp_path):
    """The profile photo request's library step (engine/account_requests.py) on Telegram: the picture
    is downloaded from the agent's own Saved Messages, by its own user id."""
    from engine.account_requests import library_picture_fetch

    standin, agent, me, bob = world
    settings.MEDIA_ROOT = tmp_path / "media"
    data = image_bytes("kite", size=(64, 48), color="blue", fmt="JPEG")
    photo = standin.run(add_photo, standin.world, data, width=64, height=48)

    async def run():
        transport = await connected(agent)
        dm = standin.world.dm_key(me.id, bob.id)
        standin.run(standin.world.send, bob.id, dm, "look", media=types.MessageMediaPhoto(photo=photo))
        [new] = await next_updates(transport, NewMessage)
        request = await sync_to_async(_request)(agent, bob.id, new.message.message_id, str(photo.id))
        saved, error = await execute_request(request, transport)
        assert error == ""
        path = await library_picture_fetch(request, transport, str(photo.id))
        await transport.disconnect()
        return path

    path = async_to_sync(run)()
    assert path.parent == tmp_path / "media" / "profile_uploads" / str(agent.pk)
    assert path.read_bytes() == data
