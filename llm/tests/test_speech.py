"""Speech through the real google-genai client against the stand-in's speech wire format."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cindy_site.testing.fake_llm import SPEECH_RATE, speech_seconds
from llm.errors import LLMConfigError, LLMPermanentError, LLMTransientError
from llm.models import LLMCall
from llm.speech import VoiceChoice, speak
from llm.tasks import MAX_VOICE_CHARACTERS, TaskError, validate_task

pytestmark = pytest.mark.django_db

TEXT = "The reading room opens at nine."


def test_speech_is_pcm_at_the_rate_the_reply_names_and_the_call_is_costed(fake_llm, settings):
    speech = speak(TEXT, voice=VoiceChoice())
    assert speech.sample_rate == SPEECH_RATE and speech.voice == settings.CINDY_SPEECH_VOICE == "Kore"
    assert len(speech.pcm) == round(speech_seconds(TEXT) * SPEECH_RATE) * 2
    call = LLMCall.objects.get(pk=speech.llm_call_id)
    assert (call.purpose, call.status, call.model) == ("speech", "ok", "gemini-2.5-flash-preview-tts")
    # Gemini bills speech by tokens: text in at $0.50, audio out at $10.00 per million (the price table).
    expected = (Decimal(call.input_tokens) * Decimal("0.50") + Decimal(call.output_tokens) * 10) / 1_000_000
    assert call.output_tokens == round(speech_seconds(TEXT) * 25) and call.cost == expected.quantize(
        Decimal("0.000001")
    )


@pytest.mark.parametrize(
    ("status", "error"), [(429, LLMTransientError), (503, LLMTransientError), (400, LLMPermanentError)]
)
def test_a_refused_speech_call_raises_what_the_engine_understands(fake_llm, status, error):
    fake_llm.fail_next_speech(status, message="no voice today")
    with pytest.raises(error, match="no voice today"):
        speak(TEXT, voice=VoiceChoice(name="Puck"))
    assert LLMCall.objects.get().status == "error"


def test_a_refused_key_and_a_missing_key_are_configuration_errors(fake_llm, settings):
    fake_llm.fail_next_speech(403, message="key revoked")
    with pytest.raises(LLMConfigError, match="check GOOGLE_GEMINI_API_KEY"):
        speak(TEXT, voice=VoiceChoice())
    settings.GOOGLE_GEMINI_API_KEY = ""
    with pytest.raises(LLMConfigError, match="GOOGLE_GEMINI_API_KEY is not set"):
        speak(TEXT, voice=VoiceChoice())


def test_a_voice_task_needs_text_and_says_at_most_the_limit():
    notes: list[str] = []
    (task,) = validate_task({"kind": "voice", "text": f"  {TEXT} ", "reply_to": 12}, notes)
    assert task.params == {"text": TEXT, "reply_to": 12} and notes == []
    assert validate_task({"kind": "voice", "text": "  "}, notes) == []
    assert notes == ["a voice task without text was dropped"]
    with pytest.raises(TaskError, match='"text" is list: it must be the text to say'):
        validate_task({"kind": "voice", "text": ["hi"]})
    with pytest.raises(TaskError, match=f"a voice note says at most {MAX_VOICE_CHARACTERS}"):
        validate_task({"kind": "voice", "text": "a" * (MAX_VOICE_CHARACTERS + 1)})


@pytest.fixture
def elevenlabs(fake_llm, settings):
    settings.ELEVENLABS_API_KEY = "el-test"
    settings.ELEVENLABS_BASE_URL = fake_llm.url
    return fake_llm


def test_with_an_elevenlabs_key_speech_goes_to_elevenlabs_billed_by_the_character(elevenlabs, settings):
    speech = speak(TEXT, voice=VoiceChoice(name="21m00Tcm4TlvDq8ikWAM", language="en"))
    (request,) = elevenlabs.requests
    assert request.api == "elevenlabs" and request.headers["xi-api-key"] == "el-test"
    assert request.path.startswith("/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM?")
    assert "output_format=pcm_24000" in request.path
    assert request.json["text"] == TEXT and request.json["model_id"] == "eleven_multilingual_v2"
    assert request.json["language_code"] == "en"
    assert (speech.provider, speech.sample_rate, speech.voice) == (
        "elevenlabs",
        24_000,
        "21m00Tcm4TlvDq8ikWAM",
    )
    assert len(speech.pcm) == round(speech_seconds(TEXT) * SPEECH_RATE) * 2
    call = LLMCall.objects.get(pk=speech.llm_call_id)
    assert (call.provider, call.purpose, call.status, call.input_tokens) == (
        "elevenlabs",
        "speech",
        "ok",
        len(TEXT),
    )
    assert call.cost == (Decimal(len(TEXT)) * 100 / 1_000_000).quantize(Decimal("0.000001"))


def test_a_gemini_voice_name_falls_back_to_the_default_elevenlabs_voice(elevenlabs, settings):
    settings.CINDY_ELEVENLABS_VOICE = "AbCdEfGhIjKlMnOpQrSt"
    assert speak(TEXT, voice=VoiceChoice(name="Kore")).voice == "AbCdEfGhIjKlMnOpQrSt"
    assert "/text-to-speech/AbCdEfGhIjKlMnOpQrSt?" in elevenlabs.requests[0].path


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, LLMTransientError), (500, LLMTransientError), (401, LLMConfigError), (422, LLMPermanentError)],
)
def test_a_refused_elevenlabs_call_raises_what_the_engine_understands(elevenlabs, status, error):
    elevenlabs.fail_next_speech(status, message="voice_not_found")
    with pytest.raises(error, match="voice_not_found"):
        speak(TEXT, voice=VoiceChoice())
    assert LLMCall.objects.get().status == "error"
