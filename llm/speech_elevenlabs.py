"""Speech through ElevenLabs (the `elevenlabs` SDK), used for voice notes when ELEVENLABS_API_KEY is set.

`text_to_speech.convert(voice_id, text=..., model_id=CINDY_ELEVENLABS_MODEL, output_format="pcm_24000")`
answers raw 16-bit mono PCM at 24 kHz. The voice is the persona's `# Voice` when it is an ElevenLabs
voice id (20 letters and digits), else CINDY_ELEVENLABS_VOICE. ElevenLabs bills by the character: the
`LLMCall` row counts the text's characters as its input tokens, and the price rows of provider
`elevenlabs` are per million characters.
"""

from __future__ import annotations

import re
import time

from django.conf import settings

from llm.errors import LLMConfigError, LLMPermanentError, LLMTransientError
from llm.models import LLMCall
from llm.providers.base import transport_errors
from llm.request import Usage
from llm.usage import llm_call_finish, llm_call_start

PROVIDER = "elevenlabs"
PCM_RATE = 24_000
OUTPUT_FORMAT = f"pcm_{PCM_RATE}"
_VOICE_ID = re.compile(r"^[A-Za-z0-9]{20}$")


def is_elevenlabs_voice(name: str) -> bool:
    return bool(_VOICE_ID.match(name or ""))


def elevenlabs_speak(
    text: str, *, voice_name: str, language: str, agent_id, conversation_id, node_id, timeout=None
) -> tuple[bytes, int, str, str, int]:
    """(pcm, sample rate, model, voice id, LLMCall id). Raises LLMConfigError, LLMTransientError or
    LLMPermanentError as `llm.speech.speak` documents."""
    from elevenlabs.client import ElevenLabs
    from elevenlabs.core.api_error import ApiError

    model = settings.CINDY_ELEVENLABS_MODEL
    voice = voice_name if is_elevenlabs_voice(voice_name) else settings.CINDY_ELEVENLABS_VOICE
    client = ElevenLabs(
        api_key=settings.ELEVENLABS_API_KEY,
        base_url=settings.ELEVENLABS_BASE_URL or None,
        timeout=settings.LLM_TIMEOUT_SECONDS,
    )
    call = llm_call_start(
        provider=PROVIDER,
        model=model,
        purpose=LLMCall.Purpose.SPEECH,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        estimated_input_tokens=len(text),
    )
    started = time.monotonic()
    usage = Usage(input_tokens=len(text))  # billed by the character, whatever comes back

    def finish(status: str, error: str = "") -> None:
        latency = int((time.monotonic() - started) * 1000)
        llm_call_finish(call, usage=usage, status=status, latency_ms=latency, error=error)

    extra: dict = {"language_code": language} if language else {}
    if timeout is not None:
        extra["request_options"] = {"timeout_in_seconds": max(1, int(timeout))}
    try:
        chunks = client.text_to_speech.convert(
            voice, text=text, model_id=model, output_format=OUTPUT_FORMAT, **extra
        )
        pcm = b"".join(chunks)
    except ApiError as exc:
        code = exc.status_code or 0
        message = f"ElevenLabs speech ({model}, voice {voice}) answered {code}: {exc.body}"
        finish(LLMCall.Status.ERROR, message)
        if code in (401, 403):
            raise LLMConfigError(f"{message}: check ELEVENLABS_API_KEY") from exc
        if code == 429 or code >= 500 or code == 408:
            raise LLMTransientError(message) from exc
        raise LLMPermanentError(
            f"{message}: check CINDY_ELEVENLABS_MODEL and the voice (the persona's # Voice or "
            "CINDY_ELEVENLABS_VOICE)"
        ) from exc
    except transport_errors() as exc:
        message = f"ElevenLabs speech request failed: {type(exc).__name__}: {exc}"
        finish(LLMCall.Status.ERROR, message)
        raise LLMTransientError(message) from exc
    if not pcm:
        finish(LLMCall.Status.EMPTY, "the reply carries no audio")
        raise LLMPermanentError(f"ElevenLabs speech ({model}) returned no audio for {len(text)} characters")
    finish(LLMCall.Status.OK)
    return pcm, PCM_RATE, model, voice, call.pk
