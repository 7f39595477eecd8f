"""The browser sandbox chat's voice notes: the message row carries the player's URL and length, and the
file is served to verified staff as Ogg audio only."""

from __future__ import annotations

import pytest

from cindy_site.testing.audio import voice_note
from dashboard import selectors
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_say
from sandbox.services.voice import sandbox_voice_part

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_a_voice_note_row_has_its_player_url_and_length(verified, sandbox_agent):
    data = voice_note(1.5)
    part = sandbox_voice_part(data, name="note.ogg")
    sandbox_say(agent=sandbox_agent, as_name="Alice", media=[part])

    [row] = selectors.sandbox_message_row(SandboxMessage.objects.get())["media"]

    assert row["media_kind"] == "voice" and row["duration"] == pytest.approx(1.5, abs=0.05)
    assert row["url"] == f"/dashboard/sandbox/voice/{part['unique_id']}.ogg"
    served = verified.client.get(row["url"])
    assert served.status_code == 200 and served["Content-Type"] == "audio/ogg"
    assert served.content == data
    assert served["X-Content-Type-Options"] == "nosniff"


def test_only_ogg_files_are_served_as_voice_notes(verified, media_root):
    folder = media_root / "sandbox"
    folder.mkdir(parents=True)
    (folder / "page.ogg").write_bytes(b"<html><script>alert(1)</script></html>")

    assert verified.client.get("/dashboard/sandbox/voice/page.ogg").status_code == 404
    assert verified.client.get("/dashboard/sandbox/voice/missing.ogg").status_code == 404


def test_voice_notes_are_for_verified_staff_only(unverified, media_root):
    folder = media_root / "sandbox"
    folder.mkdir(parents=True)
    (folder / "n.ogg").write_bytes(voice_note(0.5))

    assert unverified.client.get("/dashboard/sandbox/voice/n.ogg").status_code == 302
