"""Voice in: a partner's voice note, audio file or video note becomes a transcript in the history.

The media describer (`llm.media.warm_media_descriptions`) hands these kinds here, within the same
per-tick budget. The transcript is cached per media unique id as the catalog's `MediaDescription`
(description = transcript, plus duration and language), so the same note is transcribed once; an
operator corrects it in the admin like any description, and curated always wins.

- Route (`transcription_route`): TRANSCRIPTION_MODEL when set. Otherwise the chat's LLM decides: a
  Gemini agent's notes go to MEDIA_MODEL (or, when MEDIA_MODEL is not a Gemini model, the agent's own
  Gemini model) as audio input; any other agent's go to OpenAI's transcription endpoint
  (`gpt-4o-mini-transcribe`). A Gemini route sends the audio as inline data and asks for JSON
  (transcript, language); an OpenAI-compatible route calls `audio.transcriptions.create`.
- Longer than MAX_AUDIO_SECONDS (5 minutes, the original's cap): no call; the history says it was
  too long to transcribe. The length is the part's (what Telegram states), or the file's own as PyAV
  reads it when the part states none or less than the file holds.
- Larger than MAX_AUDIO_BYTES: no call. Empty, or without an audio stream PyAV can read (a
  mislabelled file, a picture): no call, `not_understood`.
- Every call is an `LLMCall` of purpose `transcribe`, costed with the audio price of its model.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db.models import F

from cindy_site.clock import now
from cindy_site.parameters import parameter
from llm.calls import call_llm
from llm.errors import LLMConfigError, LLMDeadlineError, LLMError, LLMTransientError
from llm.models import LLMCall
from llm.providers import provider_for
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route, resolve, route_for
from media_catalog.audio import (
    MAX_AUDIO_SECONDS,
    audio_kind,
    is_transcribable,
    media_duration,
    part_duration,
    too_long,
)
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem

logger = logging.getLogger(__name__)

#: The OpenAI transcription model used when the chat's LLM is not Gemini and TRANSCRIPTION_MODEL is empty.
OPENAI_TRANSCRIPTION_DEFAULT = "gpt-4o-mini-transcribe"
#: Inline audio stays under Gemini's request size limit; OpenAI's upload limit is 25 MB.
MAX_AUDIO_BYTES = 20_000_000
TRANSCRIBE_SYSTEM = (
    "You transcribe voice messages and audio from a chat for someone who cannot hear them. Write what "
    "is said, word for word, in the language it is spoken in; mark words you cannot make out as "
    "[unclear]. If nobody speaks, describe the sound in square brackets, e.g. [music] or [a dog "
    "barking]. Answer with JSON: transcript, and language as an ISO 639-1 code."
)
TRANSCRIPT_SCHEMA = {
    "type": "object",
    "properties": {"transcript": {"type": "string"}, "language": {"type": "string"}},
    "required": ["transcript", "language"],
}
_LABELS = {"voice": "a voice message", "audio": "an audio clip", "video_note": "a video note"}
_USABLE = {MediaDescription.Status.OK, MediaDescription.Status.CURATED}


@dataclass(frozen=True)
class Transcript:
    status: str
    text: str | None = None
    language: str = ""
    duration: float | None = None


def transcription_route(*, agent_id: int | None, conversation_id: int | None = None) -> Route:
    """Where a chat's audio is transcribed (see the module's docstring)."""
    if parameter("TRANSCRIPTION_MODEL").strip():
        return resolve(parameter("TRANSCRIPTION_MODEL"))
    from agents.models import Agent
    from conversations.models import Conversation

    agent_llm = Agent.objects.filter(pk=agent_id).values_list("llm", flat=True).first() if agent_id else ""
    chat_llm = (
        Conversation.objects.filter(pk=conversation_id).values_list("llm_model", flat=True).first()
        if conversation_id
        else ""
    )
    chat = route_for(agent_llm=agent_llm or "", conversation_llm=chat_llm or "")
    if chat.provider != "gemini":
        return Route("openai", OPENAI_TRANSCRIPTION_DEFAULT)
    media = resolve(parameter("MEDIA_MODEL"))
    return media if media.provider == "gemini" else chat


def _mime(part: MediaItem, path: Path) -> str:
    mime = (part.mime or mimetypes.guess_type(path.name)[0] or "").lower()
    if mime in ("", "application/octet-stream") and path.suffix.lower() in (".ogg", ".oga", ".opus"):
        return "audio/ogg"
    return mime


def transcribe_file(
    part: MediaItem,
    path: Path,
    *,
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> Transcript:
    """Ask the transcription route for one file's transcript. Raises LLMConfigError, UnknownModelError
    and LLMDeadlineError (nothing to store: the caller stops); any other failure is a status."""
    duration = part_duration(part)
    if too_long(part, duration):
        return Transcript(MediaDescription.Status.UNSUPPORTED, duration=duration)
    size = path.stat().st_size
    if size > MAX_AUDIO_BYTES:
        return Transcript(MediaDescription.Status.UNSUPPORTED, duration=duration)
    measured = media_duration(path, audio=True) if size else None
    if measured is None:  # empty, or not audio nor video at all (a mislabelled file): nothing to hear
        logger.info("%s %s is not audio that can be read; not transcribed", audio_kind(part), part.unique_id)
        return Transcript(MediaDescription.Status.NOT_UNDERSTOOD, duration=duration)
    if duration is None or measured > duration + 1:  # the file's own length when the part understates it
        duration = measured
    if too_long(part, duration):
        return Transcript(MediaDescription.Status.UNSUPPORTED, duration=duration)
    route = transcription_route(agent_id=agent_id, conversation_id=conversation_id)
    mime = _mime(part, path)
    provider = provider_for(route.provider)
    if route.provider == "gemini":
        supported = provider.supports_media(mime)
    else:
        from llm.providers.openai_compat import TRANSCRIPTION_FORMATS

        supported = mime in TRANSCRIPTION_FORMATS
    if not supported:
        return Transcript(MediaDescription.Status.UNSUPPORTED, duration=duration)
    request = LLMRequest(
        system=TRANSCRIBE_SYSTEM,
        turns=[
            Turn(
                role="user",
                parts=(Part(text="Transcribe this voice message."), Part(data=path.read_bytes(), mime=mime)),
            )
        ],
        response_schema=TRANSCRIPT_SCHEMA,
        transcription=True,
    )
    try:
        reply = call_llm(
            request,
            route=route,
            purpose=LLMCall.Purpose.TRANSCRIBE,
            agent_id=agent_id,
            conversation_id=conversation_id,
            node_id=node_id,
            sleep=sleep,
            deadline=deadline,
        )
    except (LLMDeadlineError, LLMConfigError):
        raise
    except LLMTransientError as exc:
        timed_out = "timeout" in str(exc).lower() or "timed out" in str(exc).lower()
        status = MediaDescription.Status.TIMEOUT if timed_out else MediaDescription.Status.ERROR
        return Transcript(status, duration=duration)
    except LLMError:
        return Transcript(MediaDescription.Status.ERROR, duration=duration)
    text, language = parse_transcript(reply.text)
    if reply.status != "ok" or not text:
        return Transcript(MediaDescription.Status.NOT_UNDERSTOOD, duration=duration)
    return Transcript(MediaDescription.Status.OK, text, language, duration)


def parse_transcript(reply: str) -> tuple[str, str]:
    """(transcript, language) of a reply: the JSON asked for, or, from a model that ignored the format,
    the whole reply as the transcript."""
    try:
        data = json.loads(reply)
    except ValueError:
        return " ".join(reply.split()), ""
    if not isinstance(data, dict):
        return " ".join(reply.split()), ""
    text = data.get("transcript")
    language = data.get("language")
    return (
        " ".join(text.split()) if isinstance(text, str) else "",
        language.strip()[:32] if isinstance(language, str) else "",
    )


def store_transcript(part: MediaItem, transcript: Transcript, *, mime: str) -> MediaDescription:
    """Cache the outcome under the part's unique id; a curated row is never touched."""
    fields = {
        "status": transcript.status,
        "description": transcript.text,
        "language": transcript.language,
        "duration": transcript.duration,
        "mime": mime[:100],
    }
    row, created = MediaDescription.objects.get_or_create(
        unique_id=part.unique_id,
        defaults={"kind": audio_kind(part), "source": MediaDescription.Source.AI, "attempts": 1, **fields},
    )
    if created or row.is_curated:
        return row
    # Only while the row is still an AI one: curated text written meanwhile always wins.
    MediaDescription.objects.filter(pk=row.pk).exclude(source=MediaDescription.Source.CURATED).update(
        **fields, attempts=F("attempts") + 1, updated=now()
    )
    row.refresh_from_db()
    return row


def transcribe_and_store(part: MediaItem, path: Path, **context: Any) -> MediaDescription:
    transcript = transcribe_file(part, path, **context)
    return store_transcript(part, transcript, mime=_mime(part, path))


def _heard_duration(part: MediaItem, description: MediaDescription | None) -> float | None:
    """The part's stated length, or the file's measured one (kept on the description) when longer."""
    duration = part_duration(part)
    measured = description.duration if description is not None else None
    if measured is not None and (duration is None or measured > duration + 1):
        return measured
    return duration


def _duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def render_audio(part: MediaItem, description: MediaDescription | None, *, speaker: str = "") -> str:
    """One heard media part in the history: who speaks, how long, the language and the transcript,
    e.g. ‹a voice message from Ada, 3.2 s, in en: “See you at six.”›; past the cap, a note instead."""
    text = _LABELS.get(audio_kind(part), "an audio clip")
    if speaker:
        text += f" from {speaker}"
    duration = _heard_duration(part, description)
    if duration is not None:
        text += f", {_duration_text(duration)}"
    usable = description is not None and description.status in _USABLE and (description.description or "")
    if usable:
        language = description.language
        transcript = " ".join(description.description.split())
        return f"‹{text}{f', in {language}' if language else ''}: “{transcript}”›"
    if too_long(part, duration):
        limit = _duration_text(MAX_AUDIO_SECONDS)
        return f"‹{text}: not transcribed, it is longer than the {limit} limit›"
    return f"‹{text}›"


def transcript_fields(
    part: MediaItem, description: MediaDescription | None, *, speaker: str
) -> dict[str, Any]:
    """The transcript's facts for a message's rendered part (the prompt and the dashboard)."""
    usable = description is not None and description.status in _USABLE
    duration = _heard_duration(part, description)
    return {
        "speaker": speaker,
        "duration": duration,
        "language": description.language if usable else "",
        "transcript": (description.description or "") if usable else "",
        "too_long": too_long(part, duration),
    }


__all__ = [
    "MAX_AUDIO_SECONDS",
    "Transcript",
    "is_transcribable",
    "render_audio",
    "store_transcript",
    "transcribe_and_store",
    "transcribe_file",
    "transcription_route",
]
