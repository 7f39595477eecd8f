"""The sandbox's voice-note files: OGG only, verified staff only, byte ranges for the audio player."""

from __future__ import annotations

import math
import struct

import pytest

from conversations.voice_encoding import encode_voice_note
from sandbox import forms

pytestmark = pytest.mark.django_db


@pytest.fixture
def note(settings, tmp_path) -> bytes:
    settings.MEDIA_ROOT = tmp_path
    folder = tmp_path / forms.PHOTO_DIR
    folder.mkdir()
    pcm = struct.pack("<24000h", *(int(5000 * math.sin(i / 20)) for i in range(24000)))
    data = encode_voice_note(pcm, sample_rate=24000).data
    (folder / "voice-1.ogg").write_bytes(data)
    (folder / "voice-2.ogg").write_bytes(b"<html>not audio</html>")
    return data


def test_a_voice_note_is_served_whole_and_by_byte_range(verified, note):
    whole = verified.client.get("/dashboard/sandbox/voice/voice-1.ogg")
    assert whole.status_code == 200 and whole.content == note
    assert whole["Content-Type"] == "audio/ogg" and whole["Accept-Ranges"] == "bytes"
    assert whole["X-Content-Type-Options"] == "nosniff"
    part = verified.client.get("/dashboard/sandbox/voice/voice-1.ogg", HTTP_RANGE="bytes=10-19")
    assert part.status_code == 206 and part.content == note[10:20]
    assert part["Content-Range"] == f"bytes 10-19/{len(note)}"
    tail = verified.client.get("/dashboard/sandbox/voice/voice-1.ogg", HTTP_RANGE="bytes=-100")
    assert tail.status_code == 206 and tail.content == note[-100:]
    past = verified.client.get("/dashboard/sandbox/voice/voice-1.ogg", HTTP_RANGE=f"bytes={len(note)}-")
    assert past.status_code == 416


def test_only_ogg_files_for_verified_staff_are_served(verified, unverified, note):
    assert unverified.client.get("/dashboard/sandbox/voice/voice-1.ogg").status_code == 302
    assert verified.client.get("/dashboard/sandbox/voice/voice-2.ogg").status_code == 404
    assert verified.client.get("/dashboard/sandbox/voice/..%2Fsecret.ogg").status_code == 404
    assert verified.client.get("/dashboard/sandbox/voice/voice-9.ogg").status_code == 404


def test_a_voice_note_is_only_read(verified, note):
    assert verified.client.post("/dashboard/sandbox/voice/voice-1.ogg").status_code == 405
