"""Voice in: voice notes, audio files and video notes become transcripts, through the real google-genai
and openai SDKs against the local stand-in, cached per media unique id, costed with audio prices."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal

import pytest

from cindy_site.testing.audio import video_note, voice_note
from llm.conversation import to_chat_messages
from llm.media import warm_media_descriptions
from llm.models import LLMCall
from llm.tests.conftest import add_message
from llm.transcription import Transcript, store_transcript
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem
from media_catalog.services.curation import media_description_save

SAID = "See you at six by the bakery."


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


@pytest.fixture(scope="module")
def ogg() -> bytes:
    return voice_note(3.2)


def _voice(dm, message_id, unique_id, data, *, media_root, duration=3.2, **part):
    (media_root / "chat" / f"{unique_id}.ogg").write_bytes(data)
    media = {
        "kind": "media",
        "media_kind": "voice",
        "unique_id": unique_id,
        "mime": "audio/ogg",
        "file": f"chat/{unique_id}.ogg",
        **({"duration": duration} if duration is not None else {}),
        **part,
    }
    return add_message(dm, message_id, media=[media])


def _rendered(message) -> dict:
    [chat] = to_chat_messages([message], tz=dt.UTC)
    return next(p for p in chat.parts if p["kind"] == "media")


def test_a_voice_note_becomes_a_transcript_through_gemini_audio_input(dm, fake_llm, media_root, ogg):
    fake_llm.reply_with(
        json.dumps({"transcript": SAID, "language": "en"}),
        input_tokens=160,
        output_tokens=12,
        audio_tokens=103,
    )
    message = _voice(dm, 1, "V1", ogg, media_root=media_root)

    assert warm_media_descriptions([message], agent_id=dm.agent_id, conversation_id=dm.pk) == 1

    [request] = fake_llm.requests
    assert request.path.endswith("/models/gemini-2.5-flash:generateContent")
    inline = request.json["contents"][0]["parts"][1]["inlineData"]
    assert inline["mime_type"] == "audio/ogg" and base64.b64decode(inline["data"]) == ogg
    assert request.json["generationConfig"]["responseMimeType"] == "application/json"
    row = MediaDescription.objects.get(unique_id="V1")
    assert (row.kind, row.source, row.status) == ("voice", "ai", "ok")
    assert (row.description, row.language, row.duration) == (SAID, "en", 3.2)
    call = LLMCall.objects.get()
    assert (call.purpose, call.status, call.audio_tokens, call.conversation_id) == (
        "transcribe",
        "ok",
        103,
        dm.pk,
    )
    # gemini-2.5-flash: 57 text tokens at 0.30, 103 audio tokens at 1.00, 12 out at 2.50 per million.
    assert call.cost == Decimal("0.000150")

    part = _rendered(message)
    assert part["rendered_text"] == f"‹a voice message from Alice, 3.2 s, in en: “{SAID}”›"
    assert (part["speaker"], part["duration"], part["language"], part["transcript"]) == (
        "Alice",
        3.2,
        "en",
        SAID,
    )


def test_the_same_media_id_again_makes_no_second_call(dm, fake_llm, media_root, ogg):
    fake_llm.reply_with(json.dumps({"transcript": SAID, "language": "en"}))
    first = _voice(dm, 1, "V1", ogg, media_root=media_root)
    warm_media_descriptions([first])
    again = _voice(dm, 2, "V1", ogg, media_root=media_root)

    assert warm_media_descriptions([first, again]) == 0

    assert len(fake_llm.requests) == 1 and LLMCall.objects.count() == 1
    assert SAID in _rendered(again)["rendered_text"]


def test_past_five_minutes_no_call_and_a_note_in_the_history(dm, fake_llm, media_root, ogg):
    message = _voice(dm, 1, "LONG", ogg, media_root=media_root, duration=301.0)

    assert warm_media_descriptions([message]) == 0

    assert fake_llm.requests == [] and not MediaDescription.objects.exists()
    assert _rendered(message)["rendered_text"] == (
        "‹a voice message from Alice, 5 min 1 s: not transcribed, it is longer than the 5 min limit›"
    )
    assert _rendered(message)["too_long"] is True


def test_a_duration_the_part_lacks_is_read_with_pyav(dm, fake_llm, media_root):
    fake_llm.reply_with(json.dumps({"transcript": "Hi.", "language": "en"}))
    message = _voice(dm, 1, "V2", voice_note(2.0), media_root=media_root, duration=None)

    warm_media_descriptions([message])

    assert MediaDescription.objects.get(unique_id="V2").duration == pytest.approx(2.0, abs=0.05)
    assert "2.0 s" in _rendered(message)["rendered_text"]


def test_an_operators_corrected_transcript_wins(dm, fake_llm, media_root, ogg):
    fake_llm.reply_with(json.dumps({"transcript": "See you at sex.", "language": "en"}))
    message = _voice(dm, 1, "V1", ogg, media_root=media_root)
    warm_media_descriptions([message])
    row = MediaDescription.objects.get(unique_id="V1")

    row.description = SAID  # the admin's change form
    media_description_save(description=row, text_changed=True)
    store_transcript(
        MediaItem.from_part(message.media[0]), Transcript("ok", "overwritten?", "de", 3.2), mime="audio/ogg"
    )

    row.refresh_from_db()
    assert (row.source, row.status, row.description, row.language) == ("curated", "curated", SAID, "en")
    assert warm_media_descriptions([message]) == 0 and len(fake_llm.requests) == 1
    assert _rendered(message)["rendered_text"] == f"‹a voice message from Alice, 3.2 s, in en: “{SAID}”›"


def test_a_non_gemini_agent_uses_the_openai_transcription_endpoint(dm, fake_llm, media_root, ogg):
    dm.agent.llm = "gpt-5-mini"
    dm.agent.save(update_fields=["llm"])
    fake_llm.reply_with("Bonjour à tous.", language="fr", input_tokens=50, output_tokens=6, audio_tokens=44)
    message = _voice(dm, 1, "V3", ogg, media_root=media_root)

    warm_media_descriptions([message], agent_id=dm.agent_id, conversation_id=dm.pk)

    [request] = fake_llm.requests
    assert request.path == "/v1/audio/transcriptions"
    assert request.headers["content-type"].startswith("multipart/form-data")
    assert request.json["model"] == "gpt-4o-mini-transcribe" and "response_format" not in request.json
    upload = request.json["file"]
    assert (upload["filename"], upload["content_type"]) == ("voice.ogg", "audio/ogg")
    assert base64.b64decode(upload["data_b64"]) == ogg
    row = MediaDescription.objects.get(unique_id="V3")
    assert (row.description, row.language) == ("Bonjour à tous.", "fr")
    call = LLMCall.objects.get()
    assert (call.provider, call.model, call.purpose, call.audio_tokens) == (
        "openai",
        "gpt-4o-mini-transcribe",
        "transcribe",
        44,
    )
    # 6 text tokens at 1.25, 44 audio tokens at 3.00, 6 out at 5.00 per million.
    assert call.cost == Decimal("0.000170")


def test_whisper_is_asked_for_verbose_json_and_billed_by_the_minute(dm, fake_llm, media_root, ogg, settings):
    settings.TRANSCRIPTION_MODEL = "openai:whisper-1"
    fake_llm.reply_with("Hello there.", language="english", audio_seconds=3.2)
    message = _voice(dm, 1, "V4", ogg, media_root=media_root)

    warm_media_descriptions([message])

    assert fake_llm.requests[0].json["response_format"] == "verbose_json"
    assert MediaDescription.objects.get(unique_id="V4").language == "english"
    call = LLMCall.objects.get()
    assert (call.model, call.audio_seconds, call.cost) == ("whisper-1", 3.2, Decimal("0.000320"))


def test_a_video_note_is_transcribed_from_its_mp4(dm, fake_llm, media_root):
    data = video_note(1.0)
    (media_root / "chat" / "R1.mp4").write_bytes(data)
    part = {
        "kind": "media",
        "media_kind": "video",
        "unique_id": "R1",
        "mime": "video/mp4",
        "duration": 1.0,
        "extra": {"round": True},
        "file": "chat/R1.mp4",
    }
    message = add_message(dm, 1, media=[part])
    fake_llm.reply_with(json.dumps({"transcript": "Look at this!", "language": "en"}))

    warm_media_descriptions([message])

    inline = fake_llm.requests[0].json["contents"][0]["parts"][1]["inlineData"]
    assert inline["mime_type"] == "video/mp4" and base64.b64decode(inline["data"]) == data
    assert MediaDescription.objects.get(unique_id="R1").kind == "video_note"
    assert _rendered(message)["rendered_text"] == "‹a video note from Alice, 1.0 s, in en: “Look at this!”›"


def test_a_photo_beside_still_gets_a_description(dm, fake_llm, media_root, ogg):
    """The describer's own path is unchanged: a picture is described, a voice note transcribed."""
    (media_root / "chat" / "P1.jpg").write_bytes(b"\xff\xd8\xff fake jpeg")
    photo = add_message(
        dm, 1, media=[{"kind": "media", "media_kind": "photo", "unique_id": "P1", "file": "chat/P1.jpg"}]
    )
    voice = _voice(dm, 2, "V5", ogg, media_root=media_root)
    fake_llm.reply_with(json.dumps({"transcript": SAID, "language": "en"}))
    fake_llm.reply_with("A loaf of bread.")

    assert warm_media_descriptions([photo, voice]) == 2

    assert MediaDescription.objects.get(unique_id="P1").description == "A loaf of bread."
    assert MediaDescription.objects.get(unique_id="V5").description == SAID
    assert sorted(LLMCall.objects.values_list("purpose", flat=True)) == ["describe", "transcribe"]


def test_the_agents_own_voice_note_is_not_transcribed(dm, fake_llm, media_root, ogg):
    (media_root / "chat" / "OWN.ogg").write_bytes(ogg)
    part = {
        "kind": "media",
        "media_kind": "voice",
        "unique_id": "OWN",
        "duration": 3.2,
        "file": "chat/OWN.ogg",
    }
    mine = add_message(dm, 1, is_agent=True, media=[part])

    assert warm_media_descriptions([mine]) == 0
    assert fake_llm.requests == []
    assert _rendered(mine)["rendered_text"] == "‹a voice message from you, 3.2 s›"
