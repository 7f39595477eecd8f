"""Provider-neutral request and reply: what the prompt builder produces and each provider serialises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "agent"]


@dataclass(frozen=True)
class Part:
    """One part of a turn: text, or media bytes (for media description only)."""

    text: str = ""
    data: bytes | None = None
    mime: str = ""

    @property
    def is_media(self) -> bool:
        return self.data is not None


@dataclass(frozen=True)
class Turn:
    role: Role
    parts: tuple[Part, ...]


@dataclass
class LLMRequest:
    system: str
    turns: list[Turn]
    #: JSON schema the reply must follow (the task list); None for free text (media descriptions).
    response_schema: dict[str, Any] | None = None
    #: A transcription of the request's one audio part: an OpenAI-compatible provider sends it to its
    #: transcription endpoint (`audio/transcriptions`); Gemini takes it as audio input like any media.
    transcription: bool = False
    #: What the reply may hold, e.g. ("IMAGE",) for a picture (llm/images.py); None: text.
    response_modalities: tuple[str, ...] | None = None
    #: How many leading turns are the conversation's history, the stable part of the prompt that the
    #: next turn repeats (after it: recent entries, pages, the final turn). With the system
    #: instruction, what a Gemini explicit cache may hold (llm/explicit_cache.py).
    stable_turns: int = 0


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    #: Of input_tokens, those written to the provider's prompt cache (Anthropic bills them apart).
    cache_write_tokens: int = 0
    thinking_tokens: int = 0
    #: Of input_tokens, those the provider counted as audio.
    audio_tokens: int = 0
    #: Seconds of audio billed by duration (transcription models such as whisper-1).
    audio_seconds: float = 0.0
    #: The part of output_tokens that is image output.
    image_output_tokens: int = 0


ReplyStatus = Literal["ok", "blocked", "empty"]


@dataclass
class LLMReply:
    text: str
    status: ReplyStatus = "ok"
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    provider: str = ""
    model: str = ""
    llm_call_id: int | None = None
    #: Pictures the reply holds, as (bytes, MIME type), when the request asked for images.
    images: list[tuple[bytes, str]] = field(default_factory=list)
    #: What the provider worked around on the way (an endpoint that refused structured output), for
    #: the call's record.
    notes: list[str] = field(default_factory=list)
