"""Voice in, end to end in one process: a sandbox voice note is downloaded by the gateway, transcribed on
the worker path through the real google-genai SDK, and reaches the planning prompt as a transcript, once
per media unique id, with its cost; past 5 minutes there is no download, no call, and a note."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from cindy_site.testing.audio import voice_note
from conversations.models import Message
from engine.tests.harness import Harness
from llm.models import LLMCall
from media_catalog.models import MediaDescription
from sandbox.services.chats import sandbox_say
from sandbox.services.voice import sandbox_voice_part

pytestmark = pytest.mark.django_db

SAID = "Is the bakery open on Sunday morning?"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return tmp_path


@pytest.fixture(scope="module")
def ogg() -> bytes:
    return voice_note(2.5)


def _answer(fake_llm):
    """The stand-in: a transcription request (inline audio) gets the transcript, a turn a reply."""

    def respond(request):
        from cindy_site.testing.fake_llm import FakeReply

        body = json.dumps(request.json)
        if '"audio/ogg"' in body:
            return FakeReply(
                text=json.dumps({"transcript": SAID, "language": "en"}),
                input_tokens=120,
                output_tokens=10,
                audio_tokens=80,
            )
        return FakeReply(text=json.dumps([{"kind": "send", "text": "Yes, from eight."}]))

    fake_llm.set_responder(respond)


def _prompts(fake_llm) -> list[str]:
    return [
        json.dumps(r.json, ensure_ascii=False)
        for r in fake_llm.requests
        if '"audio/ogg"' not in json.dumps(r.json)
    ]


def test_a_voice_note_reaches_the_prompt_as_a_transcript_once_per_media_id(
    agent, clock, fake_llm, media_root, ogg
):
    _answer(fake_llm)
    harness = Harness(clock)
    harness.start()
    path = media_root / "note.ogg"
    path.write_bytes(ogg)
    call_command("sandbox", "voice", agent.name, str(path), "--as", "Ada")

    harness.ingest()
    assert harness.step("media") is True
    harness.settle()

    transcriptions = LLMCall.objects.filter(purpose="transcribe")
    assert transcriptions.count() == 1
    call = transcriptions.get()
    assert (call.status, call.audio_tokens) == ("ok", 80) and call.cost > 0
    assert call.conversation_id == Message.objects.filter(is_agent=False).get().conversation_id
    [prompt] = _prompts(fake_llm)
    assert f"a voice message from Ada, 2.5 s, in en: “{SAID}”" in prompt
    assert Message.objects.filter(is_agent=True, text="Yes, from eight.").exists()

    # The same note again (the same content: the same media unique id) is not transcribed again.
    call_command("sandbox", "voice", agent.name, str(path), "--as", "Ada")
    harness.ingest()
    harness.step("media")
    harness.settle()

    assert LLMCall.objects.filter(purpose="transcribe").count() == 1
    assert len(_prompts(fake_llm)) == 2
    assert _prompts(fake_llm)[-1].count(SAID) == 2


def test_a_voice_note_past_five_minutes_is_not_downloaded_nor_transcribed(
    agent, clock, fake_llm, media_root, ogg
):
    _answer(fake_llm)
    harness = Harness(clock)
    harness.start()
    part = sandbox_voice_part(ogg, name="long.ogg") | {"duration": 312.0}  # as Telegram states it
    sandbox_say(agent=agent, as_name="Ada", media=[part])

    harness.ingest()
    assert harness.step("media") is False
    harness.settle()

    stored = Message.objects.get(is_agent=False).media[0]
    assert "file" not in stored and not (media_root / "media" / "media_store").exists()
    assert not LLMCall.objects.filter(purpose="transcribe").exists()
    assert not MediaDescription.objects.exists()
    [prompt] = _prompts(fake_llm)
    assert (
        "a voice message from Ada, 5 min 12 s: not transcribed, it is longer than the 5 min limit" in prompt
    )


def test_an_operators_transcript_is_what_the_next_prompt_shows(agent, clock, fake_llm, media_root, ogg):
    _answer(fake_llm)
    harness = Harness(clock)
    harness.start()
    path = media_root / "note.ogg"
    path.write_bytes(ogg)
    call_command("sandbox", "voice", agent.name, str(path), "--as", "Ada")
    harness.ingest()
    harness.step("media")
    harness.settle()

    from media_catalog.services.curation import media_description_curate

    row = MediaDescription.objects.get(kind="voice")
    media_description_curate(description=row, text="Is the bakery open on Sunday? (corrected)")
    call_command("sandbox", "say", agent.name, "Hello?", "--as", "Ada")
    harness.ingest()
    harness.settle()

    assert "Is the bakery open on Sunday? (corrected)" in _prompts(fake_llm)[-1]
    assert SAID not in _prompts(fake_llm)[-1]
    assert LLMCall.objects.filter(purpose="transcribe").count() == 1
