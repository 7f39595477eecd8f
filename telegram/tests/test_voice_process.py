"""A voice note on the real `runagents` process and the MTProto stand-in, with the gateway SIGKILLed
after Telegram made the message but before the gateway heard of it: the note goes out exactly once,
and it is Telegram's voice-note format (Opus at 48 kHz mono, the waveform, the duration)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from telethon.tl import types

from cindy_site.testing.fake_llm import speech_seconds
from conversations.voice_encoding import decode_voice_note, unpack_waveform
from engine.tests.processes import (  # noqa: F401 - the fixtures `telegram` extends
    child_template,
    manage,
    start_gateway,
    wait_for,
)
from telegram.tests.test_standin_process import (  # noqa: F401 - fixtures used below
    logged_in_gateway,
    stop,
    telegram,
    tess_template,
)

pytestmark = pytest.mark.slow

TASK_VOICE = Path(__file__).resolve().parents[2] / "configdir" / "prompts" / "Task-Voice.md"
TEXT = "Hello Bob, this is Tess speaking from the canal."


def voice_messages(standin, key, sender):
    def read():
        found = []
        for message in standin.world.history(key):
            document = getattr(message.media, "document", None)
            if message.sender == sender and document is not None:
                audio = [a for a in document.attributes if isinstance(a, types.DocumentAttributeAudio)]
                if audio and audio[0].voice:
                    found.append((message, document, audio[0], standin.world.files[document.id]))
        return found

    return standin.run(read)


def test_a_gateway_killed_mid_send_of_a_voice_note_sends_it_once(telegram):  # noqa: F811
    env, db, llm, standin, agent, bob, tmp = telegram
    manage(
        env,
        "shell",
        "-c",
        "from pathlib import Path; from agents.models import Agent, RolePrompt; "
        "RolePrompt.objects.create(name='Task-Voice', scope_key=0, "
        f"text=Path({str(TASK_VOICE)!r}).read_text()); "
        "Agent.objects.filter(name='Tess').update(role_prompt_names=['Task-Voice'])",
    )
    dm = standin.world.dm_key(agent.id, bob.id)
    llm.set_default_reply(json.dumps([{"kind": "voice", "text": TEXT}]))
    standin.hold_answer("messages.sendMedia", 60)  # the note is made; the answer never arrives
    process, log = logged_in_gateway(env, tmp)
    try:
        standin.run(standin.world.send, bob.id, dm, "send me a voice note, Tess")
        wait_for(lambda: voice_messages(standin, dm, agent.id), "the voice note to reach the server", log)
        stop(process)  # SIGKILL: the gateway never heard that the send succeeded
        (node_status,) = db.query("SELECT status FROM conversations_tasknode WHERE kind = 'voice'")
        assert node_status[0] == "running"
        llm.set_default_reply("[]")
        process = start_gateway(env, log)
        wait_for(
            lambda: db.query("SELECT status FROM conversations_tasknode WHERE kind = 'voice'") == [("done",)],
            "the voice node to finish after the restart",
            log,
        )
    finally:
        stop(process)

    notes = voice_messages(standin, dm, agent.id)
    assert len(notes) == 1  # sent once, though sent twice
    message, document, audio, data = notes[0]
    sends = standin.calls_of("messages.sendMedia")
    assert len(sends) == 2 and {c.request.random_id for c in sends} == {message.random_id}
    assert document.mime_type == "audio/ogg" and unpack_waveform(audio.waveform)
    decoded = decode_voice_note(data)
    assert (decoded.codec, decoded.sample_rate, decoded.channels) == ("opus", 48_000, 1)
    assert decoded.duration == pytest.approx(speech_seconds(TEXT), abs=0.01)
    assert audio.duration == math.ceil(decoded.duration)
    # The speech was made once, on a worker: the retried node sent the stored file.
    speech = [r for r in llm.requests if r.api == "gemini-speech"]
    assert len(speech) == 1
    assert db.query("SELECT COUNT(*) FROM conversations_voicenote") == [(1,)]
    recording = [
        c
        for c in standin.calls_of("messages.setTyping")
        if isinstance(c.request.action, types.SendMessageRecordAudioAction)
    ]
    assert recording, "no 'recording a voice message' action was shown"
    (mirrored,) = db.query(
        "SELECT media FROM conversations_message WHERE is_agent = 1 AND media LIKE '%voice%'"
    )
    assert json.loads(mirrored[0])[0]["extra"]["transcript"] == TEXT
