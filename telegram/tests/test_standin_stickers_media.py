"""Animated and premium stickers, Saved Messages stickers, the account's Premium flag and long videos,
read through `TelethonTransport` from the loopback stand-in (real Telethon, real TL objects)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from telethon.tl import types

from cindy_site.testing.mtproto.media import (
    add_sticker_set,
    add_video,
    image_bytes,
    save_to_saved_messages,
    sticker_document,
    tgs_bytes,
)
from conversations.transport.base import NewMessage

from . import test_standin_transport as base
from .test_standin_transport import connected, next_updates

standin = base.standin  # the stand-in and its world, as the transport's own tests have them
world = base.world

WEBP = image_bytes("x", size=(64, 64), color="green", fmt="WEBP")


def _sets(standin):
    if "motiontest" not in standin.world.sticker_sets:
        standin.run(
            add_sticker_set,
            standin.world,
            "MotionTest",
            "Motion test",
            [("🟥", tgs_bytes()), ("🟦", tgs_bytes(rgb=(0.1, 0.2, 0.9)))],
            mime="application/x-tgsticker",
            premium=("🟦",),
        )
        standin.run(add_sticker_set, standin.world, "KeptTest", "Kept test", [("🦔", WEBP)])


def test_the_account_premium_flag_and_premium_stickers_are_read_as_telegram_marks_them(world):
    standin, agent, me, bob = world
    _sets(standin)

    async def run():
        transport = await connected(agent)
        info = await transport.resolve_sticker_set("MotionTest")
        await transport.disconnect()
        return transport.me, info

    account, info = async_to_sync(run)()
    assert account.premium is False
    refs = {s.name: s.ref for s in info.stickers}
    assert refs["🟥"]["premium"] is False and refs["🟦"]["premium"] is True
    assert refs["🟥"]["mime"] == "application/x-tgsticker"

    standin.run(lambda: setattr(standin.world.users[me.id], "premium", True))
    try:
        account = async_to_sync(_me)(agent)
    finally:
        standin.run(lambda: setattr(standin.world.users[me.id], "premium", False))
    assert account.premium is True


async def _me(agent):
    transport = await connected(agent)
    await transport.disconnect()
    return transport.me


def test_a_sticker_in_saved_messages_is_listed_with_its_set_and_emoji(world):
    standin, agent, me, bob = world
    _sets(standin)
    standin.run(
        save_to_saved_messages, standin.world, me.id, sticker_document(standin.world, "KeptTest", "🦔")
    )

    async def run():
        transport = await connected(agent)
        items = await transport.saved_media()
        await transport.disconnect()
        return items

    stickers = [i for i in async_to_sync(run)() if i.media_kind == "sticker"]
    assert [(s.sticker_set_name, s.sticker_name) for s in stickers] == [("KeptTest", "🦔")]


def test_an_animated_sticker_and_a_long_video_arrive_with_format_and_length(world, tmp_path):
    standin, agent, me, bob = world
    _sets(standin)
    dm = standin.world.dm_key(me.id, bob.id)
    tgs = sticker_document(standin.world, "MotionTest", "🟥")
    video = standin.run(add_video, standin.world, seconds=720, round_message=True)

    async def run():
        transport = await connected(agent)
        standin.run(standin.world.send, bob.id, dm, "", media=types.MessageMediaDocument(document=tgs))
        [sticker] = await next_updates(transport, NewMessage)
        standin.run(standin.world.send, bob.id, dm, "", media=types.MessageMediaDocument(document=video))
        [clip] = await next_updates(transport, NewMessage)
        path = await transport.download_media(bob.id, sticker.message.message_id, tmp_path / "media")
        await transport.disconnect()
        return sticker.message.media[0], clip.message.media[0], path

    sticker, clip, path = async_to_sync(run)()
    assert (sticker.sticker_format, sticker.mime, sticker.sticker_set_name) == (
        "animated",
        "application/x-tgsticker",
        "MotionTest",
    )
    assert path.read_bytes()[:2] == b"\x1f\x8b"  # the TGS file itself, gzip
    assert (clip.media_kind, clip.duration, clip.extra) == ("video", 720.0, {"round": True})
