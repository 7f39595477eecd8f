"""`TelethonTransport.send_voice` and `set_recording` with the real Telethon client against the stand-in."""

from __future__ import annotations

import math
import struct

from asgiref.sync import async_to_sync
from telethon.tl import types

from conversations.transport.base import VoiceRef
from conversations.voice_encoding import decode_voice_note, encode_voice_note, unpack_waveform
from telegram.tests.test_standin_transport import (  # noqa: F401 - fixtures used below
    connected,
    standin,
    world,
)


def test_a_voice_note_is_uploaded_as_a_voice_document_once_per_random_id(world, settings, tmp_path):  # noqa: F811
    server, agent, me, bob = world
    settings.MEDIA_ROOT = str(tmp_path)
    pcm = struct.pack("<36000h", *(int(7000 * math.sin(i / 7)) for i in range(36000)))  # 1.5 s
    audio = encode_voice_note(pcm, sample_rate=24_000)
    (tmp_path / "voice_notes").mkdir()
    (tmp_path / "voice_notes" / "n.ogg").write_bytes(audio.data)
    voice = VoiceRef(
        file="voice_notes/n.ogg", duration=audio.duration, waveform=audio.waveform, transcript="hi"
    )

    async def run():
        transport = await connected(agent)
        await transport.set_recording(bob.id)
        first = await transport.send_voice(bob.id, voice, random_id=5151, reply_to=None)
        again = await transport.send_voice(bob.id, voice, random_id=5151, reply_to=None)
        await transport.disconnect()
        return first, again

    first, again = async_to_sync(run)()
    assert first.message_id == again.message_id
    key = server.world.dm_key(me.id, bob.id)
    notes = server.run(lambda: [m for m in server.world.history(key) if m.sender == me.id and m.media])
    assert len(notes) == 1
    document = notes[0].media.document
    (attribute,) = document.attributes
    assert isinstance(attribute, types.DocumentAttributeAudio) and attribute.voice
    assert attribute.duration == 2 and unpack_waveform(attribute.waveform) == unpack_waveform(audio.waveform)
    assert document.mime_type == "audio/ogg"
    decoded = decode_voice_note(server.run(lambda: server.world.files[document.id]))
    assert (decoded.codec, decoded.sample_rate, decoded.channels, decoded.duration) == (
        "opus",
        48_000,
        1,
        1.5,
    )
    actions = [c.request.action for c in server.calls_of("messages.setTyping")]
    assert any(isinstance(a, types.SendMessageRecordAudioAction) for a in actions)
