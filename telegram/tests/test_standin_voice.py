"""A partner's voice note and video note on Telegram's wire protocol: documents with an audio attribute
(voice, duration, waveform) or a round video attribute, read and downloaded by the real Telethon
transport from the MTProto stand-in."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from telethon.tl import types

from cindy_site.testing.audio import video_note, voice_note
from cindy_site.testing.mtproto.media import add_video_note, add_voice_note, waveform
from conversations.transport.base import NewMessage
from media_catalog.audio import audio_kind, is_transcribable

from . import test_standin_transport as base
from .test_standin_transport import connected, next_updates

standin = base.standin  # the module's stand-in and its signed-in agent, as fixtures here too
world = base.world


def test_a_voice_note_arrives_as_a_voice_part_and_downloads_as_its_ogg(world, tmp_path):
    standin, agent, me, bob = world
    dm = standin.world.dm_key(me.id, bob.id)
    data = voice_note(2.2)

    async def run():
        transport = await connected(agent)
        media = standin.run(add_voice_note, standin.world, data, duration=2.2)
        standin.run(standin.world.send, bob.id, dm, "", media=media)
        [new] = await next_updates(transport, NewMessage)
        path = await transport.download_media(bob.id, new.message.message_id, tmp_path / "media")
        await transport.disconnect()
        return new.message, media, path

    message, media, path = async_to_sync(run)()
    [item] = message.media
    assert (item.media_kind, item.duration, item.mime) == ("voice", 2.0, "audio/ogg")
    assert item.unique_id == str(media.document.id)
    assert is_transcribable(item)
    assert path.read_bytes() == data and path.suffix == ".oga"


def test_a_video_note_arrives_as_a_round_video_that_is_transcribed(world, tmp_path):
    standin, agent, me, bob = world
    dm = standin.world.dm_key(me.id, bob.id)
    data = video_note(1.0)

    async def run():
        transport = await connected(agent)
        media = standin.run(add_video_note, standin.world, data, duration=1.0, size=64)
        standin.run(standin.world.send, bob.id, dm, "", media=media)
        [new] = await next_updates(transport, NewMessage)
        path = await transport.download_media(bob.id, new.message.message_id, tmp_path / "media")
        await transport.disconnect()
        return new.message, path

    message, path = async_to_sync(run)()
    part = message.media[0].to_part()
    assert (part["media_kind"], part["extra"], part["mime"]) == ("video", {"round": True}, "video/mp4")
    assert is_transcribable(message.media[0]) and audio_kind(message.media[0]) == "video_note"
    assert path.read_bytes() == data


def test_the_waveform_packs_five_bits_a_level():
    packed = waveform([31, 0, 1])
    assert packed == (31 | (1 << 10)).to_bytes(2, "little")
    assert len(waveform([0] * 100)) == 63
    assert types.DocumentAttributeAudio(duration=1, voice=True, waveform=packed).waveform == packed
