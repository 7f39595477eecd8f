"""`manage.py sandbox voice`: an OGG/Opus file sent as a voice note, and `sandbox show` printing it."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from cindy_site.testing.audio import voice_note
from conversations.transport.base import MediaItem
from media_catalog.models import MediaDescription
from sandbox.models import SandboxMessage

pytestmark = pytest.mark.django_db


@pytest.fixture
def note(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    path = tmp_path / "note.ogg"
    path.write_bytes(voice_note(3.2))
    return path


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("sandbox", *args, stdout=out)
    return out.getvalue()


def test_voice_sends_the_file_as_a_voice_note_with_its_duration(agent, clock, note, settings):
    assert _run("voice", "Wendy", str(note), "--as", "Ada").strip() == "sent #1 (voice 3.2 s)"

    [part] = SandboxMessage.objects.get().media
    assert (part["media_kind"], part["mime"], part["duration"]) == ("voice", "audio/ogg", 3.21)
    assert part["unique_id"].startswith("sbv") and part["file"] == f"sandbox/{part['unique_id']}.ogg"
    assert (settings.MEDIA_ROOT / part["file"]).read_bytes() == note.read_bytes()
    item = MediaItem.from_part(part)  # what the sandbox transport hands the gateway
    assert (item.media_kind, item.duration, item.mime) == ("voice", 3.21, "audio/ogg")


def test_the_same_note_twice_has_the_same_unique_id(agent, clock, note):
    _run("voice", "Wendy", str(note), "--as", "Ada")
    _run("voice", "Wendy", str(note), "--as", "Ada")

    first, second = (m.media[0]["unique_id"] for m in SandboxMessage.objects.order_by("message_id"))
    assert first == second


def test_show_prints_a_voice_note_and_then_its_transcript(agent, clock, note):
    _run("voice", "Wendy", str(note), "--as", "Ada")
    assert _run("show", "Wendy", "--as", "Ada").strip() == "Ada: (voice 3.2 s)"

    unique_id = SandboxMessage.objects.get().media[0]["unique_id"]
    MediaDescription.objects.create(
        unique_id=unique_id, kind="voice", status="ok", description="Hello  there."
    )

    assert _run("show", "Wendy", "--as", "Ada").strip() == "Ada: (voice 3.2 s) Hello there."


def test_voice_refuses_a_file_that_is_not_ogg(agent, clock, note, tmp_path):
    wav = tmp_path / "note.wav"
    wav.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt ")

    with pytest.raises(
        CommandError, match=r"note\.wav is not an OGG file: a voice note is Opus audio in Ogg"
    ):
        _run("voice", "Wendy", str(wav), "--as", "Ada")
    with pytest.raises(CommandError, match=r"cannot read the voice note .*missing\.ogg"):
        _run("voice", "Wendy", str(tmp_path / "missing.ogg"), "--as", "Ada")
    assert not SandboxMessage.objects.exists()


def test_voice_refuses_an_ogg_file_without_audio(agent, clock, note, tmp_path):
    broken = tmp_path / "broken.ogg"
    broken.write_bytes(b"OggS" + b"\x00" * 40)

    with pytest.raises(CommandError, match=r"broken\.ogg: no audio could be read from it"):
        _run("voice", "Wendy", str(broken), "--as", "Ada")
    assert not SandboxMessage.objects.exists()
