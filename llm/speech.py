"""Speech for the `voice` kind: text in, 16-bit mono PCM out, through Gemini's speech generation,
or through ElevenLabs when ELEVENLABS_API_KEY is set (`llm/speech_elevenlabs.py`).

Gemini's TTS models (CINDY_SPEECH_MODEL, default `gemini-2.5-flash-preview-tts`) take the text as a
user turn with `response_modalities=["AUDIO"]` and a `speech_config` naming a prebuilt voice (the
persona's `# Voice`, else CINDY_SPEECH_VOICE) and optionally a BCP-47 language. The reply carries the
audio inline as PCM (`audio/L16;codec=pcm;rate=24000`). Every call is an `LLMCall` row (purpose
`speech`) costed by the price table: Gemini bills speech by tokens, text in and audio out.
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass

from django.conf import settings
from google.genai import errors as genai_errors
from google.genai import types

from llm.errors import LLMConfigError, LLMPermanentError, LLMTransientError
from llm.models import LLMCall
from llm.providers.base import transport_errors
from llm.providers.gemini import GeminiProvider, safety_settings
from llm.request import Usage
from llm.speech_elevenlabs import PROVIDER as ELEVENLABS
from llm.speech_elevenlabs import elevenlabs_speak, is_elevenlabs_voice
from llm.usage import llm_call_finish, llm_call_start

PROVIDER = "gemini"
#: The rate Gemini's speech models answer at when the MIME type names none.
DEFAULT_PCM_RATE = 24_000
_RATE = re.compile(r"rate=(\d+)")


@dataclass(frozen=True)
class VoiceChoice:
    """Who speaks: a provider voice name ("" = CINDY_SPEECH_VOICE) and a language ("" = detected)."""

    name: str = ""
    language: str = ""


@dataclass(frozen=True)
class Speech:
    pcm: bytes
    sample_rate: int
    provider: str
    model: str
    voice: str
    llm_call_id: int | None = None


def gemini_voice(name: str) -> str:
    """The persona's voice for Gemini: an ElevenLabs voice id means nothing there."""
    return settings.CINDY_SPEECH_VOICE if not name or is_elevenlabs_voice(name) else name


def speech_config(voice: VoiceChoice, *, timeout: float | None = None) -> types.GenerateContentConfig:
    name = gemini_voice(voice.name)
    http_options = types.HttpOptions(timeout=max(1, int(timeout * 1000))) if timeout is not None else None
    return types.GenerateContentConfig(
        http_options=http_options,
        response_modalities=["AUDIO"],
        speech_config=types.SpeechConfig(
            voice_config=types.VoiceConfig(prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=name)),
            language_code=voice.language or None,
        ),
        safety_settings=safety_settings(),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def speak(
    text: str,
    *,
    voice: VoiceChoice,
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    timeout: float | None = None,
) -> Speech:
    """One speech call. Raises LLMConfigError (no key, key refused), LLMTransientError (429, 5xx,
    timeouts: worth another try later) or LLMPermanentError (refused, or no audio in the reply).
    `timeout` (seconds) shortens the call's timeout below LLM_TIMEOUT_SECONDS."""
    timeout = min(settings.LLM_TIMEOUT_SECONDS, timeout) if timeout is not None else None
    if settings.ELEVENLABS_API_KEY:
        pcm, rate, model, voice_id, call_id = elevenlabs_speak(
            text,
            voice_name=voice.name,
            language=voice.language,
            agent_id=agent_id,
            conversation_id=conversation_id,
            node_id=node_id,
            timeout=timeout,
        )
        return Speech(pcm, rate, ELEVENLABS, model, voice_id, call_id)
    model = settings.CINDY_SPEECH_MODEL
    provider = GeminiProvider(
        api_key=settings.GOOGLE_GEMINI_API_KEY,
        base_url=settings.GEMINI_BASE_URL,
        timeout=settings.LLM_TIMEOUT_SECONDS,
    )
    call = llm_call_start(
        provider=PROVIDER,
        model=model,
        purpose=LLMCall.Purpose.SPEECH,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        estimated_input_tokens=len(text) // 4 + 1,
    )
    started = time.monotonic()

    def finish(status: str, usage: Usage, error: str = "") -> None:
        latency = int((time.monotonic() - started) * 1000)
        llm_call_finish(call, usage=usage, status=status, latency_ms=latency, error=error)

    try:
        response = provider._client.models.generate_content(
            model=model, contents=text, config=speech_config(voice, timeout=timeout)
        )
    except genai_errors.APIError as exc:
        code = exc.code or 0
        message = f"Gemini speech ({model}) answered {code}: {exc.message or exc}"
        finish(LLMCall.Status.ERROR, Usage(), message)
        if code in (401, 403):
            raise LLMConfigError(f"{message}: check GOOGLE_GEMINI_API_KEY") from exc
        if code == 429 or code >= 500 or code == 408:
            raise LLMTransientError(message) from exc
        raise LLMPermanentError(f"{message}: check CINDY_SPEECH_MODEL and the persona's # Voice") from exc
    except transport_errors() as exc:
        message = f"Gemini speech request failed: {type(exc).__name__}: {exc}"
        finish(LLMCall.Status.ERROR, Usage(), message)
        raise LLMTransientError(message) from exc
    meta = response.usage_metadata
    usage = Usage(
        input_tokens=(meta.prompt_token_count or 0) if meta else 0,
        output_tokens=(meta.candidates_token_count or 0) if meta else 0,
    )
    audio = _inline_audio(response)
    if audio is None:
        finish(LLMCall.Status.EMPTY, usage, "the reply carries no audio")
        raise LLMPermanentError(f"Gemini speech ({model}) returned no audio for {len(text)} characters")
    data, mime = audio
    finish(LLMCall.Status.OK, usage)
    match = _RATE.search(mime)
    return Speech(
        pcm=data,
        sample_rate=int(match.group(1)) if match else DEFAULT_PCM_RATE,
        provider=PROVIDER,
        model=model,
        voice=gemini_voice(voice.name),
        llm_call_id=call.pk,
    )


def _inline_audio(response: types.GenerateContentResponse) -> tuple[bytes, str] | None:
    for candidate in response.candidates or []:
        for part in (candidate.content.parts if candidate.content else None) or []:
            blob = part.inline_data
            if blob is not None and blob.data and (blob.mime_type or "").startswith("audio/"):
                data = blob.data if isinstance(blob.data, bytes) else base64.b64decode(blob.data)
                return data, blob.mime_type or ""
    return None
