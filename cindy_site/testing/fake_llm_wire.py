"""The fake LLM server's wire formats: what a request is recorded as, what a reply is scripted as, and
the response bodies Gemini and OpenAI (and their errors and explicit caches) send, built from a reply.

The server (`cindy_site.testing.fake_llm`) and its request handler (`fake_llm_handler`) use these;
tests import them from `cindy_site.testing.fake_llm`.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import re
import time
from dataclasses import dataclass
from typing import Any

from cindy_site.testing.fake_llm_anthropic import anthropic_error

GEMINI_PATH = re.compile(r"^/(?:[^/]+/)?models/(?P<model>[^/:]+):generateContent$")
CACHES_PATH = re.compile(r"^/(?:[^/]+/)?cachedContents(?:/(?P<id>[^/]+))?$")
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    api: str  # "gemini", "openai" or "anthropic" (or a cache, speech or model-list request's kind)
    model: str
    #: The explicit cache a generateContent named (its system instruction and contents): what the
    #: model is shown before the request's own contents.
    cached: dict[str, Any] | None = None


@dataclass
class FakeReply:
    text: str | None
    input_tokens: int = 10
    output_tokens: int = 5
    cached_tokens: int = 0
    thinking_tokens: int = 0
    finish_reason: str | None = None
    blocked: bool = False
    audio_tokens: int = 0
    audio_seconds: float = 0.0
    language: str = ""
    #: Pictures the reply holds, as (bytes, MIME type): Gemini's image output (`inlineData` parts).
    images: tuple[tuple[bytes, str], ...] = ()
    #: The part of output_tokens that is image output (`candidatesTokensDetails`, modality IMAGE).
    image_tokens: int = 0
    #: Input written to the prompt cache (Anthropic's `cache_creation_input_tokens`).
    cache_write_tokens: int = 0


@dataclass
class Failure:
    status: int
    message: str = ""
    #: Sent as the `Retry-After` header (seconds), as providers do with a 429 or 503.
    retry_after: int | None = None


@dataclass
class Raw:
    """A body sent as it is, e.g. a 200 that is not JSON."""

    body: bytes
    status: int = 200
    content_type: str = "application/json; charset=utf-8"


@dataclass
class Stall:
    seconds: float


def form_body(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart/form-data body: text fields as strings, a file as its name, type, size and bytes."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    form: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is None:
            form[name] = data.decode("utf-8", "replace")
        else:
            form[name] = {
                "filename": filename,
                "content_type": part.get_content_type(),
                "size": len(data),
                "data_b64": base64.b64encode(data).decode(),
            }
    return form


def transcription_response(reply: FakeReply, *, form: dict[str, Any]) -> dict[str, Any]:
    """An `audio/transcriptions` answer: `json` with token usage, or whisper's `verbose_json`."""
    text = reply.text or ""
    if form.get("response_format") == "verbose_json":
        body: dict[str, Any] = {
            "task": "transcribe",
            "language": reply.language or "english",
            "duration": reply.audio_seconds,
            "text": text,
            "segments": [],
        }
        if reply.audio_seconds:
            body["usage"] = {"type": "duration", "seconds": reply.audio_seconds}
        return body
    body = {
        "text": text,
        "usage": {
            "type": "tokens",
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "input_token_details": {
                "audio_tokens": reply.audio_tokens,
                "text_tokens": max(0, reply.input_tokens - reply.audio_tokens),
            },
        },
    }
    if reply.language:
        body["languages"] = [{"code": reply.language}]
    return body


def fake_token_count(body: dict[str, Any]) -> int:
    """The stand-in's size of a cache: a token per 4 characters of its system instruction and contents
    text, 258 per inline media part."""
    contents = list(body.get("contents") or [])
    if body.get("systemInstruction"):
        contents.append(body["systemInstruction"])
    chars = media = 0
    for content in contents:
        for part in content.get("parts") or []:
            chars += len(part.get("text") or "")
            media += "inlineData" in part
    return chars // 4 + 258 * media


def expire_time(ttl: Any) -> str:
    seconds = float(str(ttl or "3600s").rstrip("s"))
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def cache_body(cache: dict[str, Any]) -> dict[str, Any]:
    """A CachedContent resource as the API returns it (never its contents)."""
    return {
        "name": cache["name"],
        "model": cache.get("model", ""),
        "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "updateTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "expireTime": cache["expireTime"],
        "usageMetadata": {"totalTokenCount": cache["tokens"]},
    }


def error_body(api: str, failure: Failure) -> dict[str, Any]:
    if api == "anthropic":
        return anthropic_error(failure.status, failure.message)
    if api == "gemini":
        status = STATUS_NAMES.get(failure.status, "UNKNOWN")
        return {"error": {"code": failure.status, "message": failure.message, "status": status}}
    return {"error": {"message": failure.message, "type": "fake_error", "code": str(failure.status)}}


def gemini_response(reply: FakeReply, *, model: str) -> dict[str, Any]:
    """A generateContent response body, the way the Gemini API shapes it."""
    usage = {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "cachedContentTokenCount": reply.cached_tokens,
        "thoughtsTokenCount": reply.thinking_tokens,
        "totalTokenCount": reply.input_tokens + reply.output_tokens + reply.thinking_tokens,
    }
    if reply.audio_tokens:
        usage["promptTokensDetails"] = [
            {"modality": "TEXT", "tokenCount": max(0, reply.input_tokens - reply.audio_tokens)},
            {"modality": "AUDIO", "tokenCount": reply.audio_tokens},
        ]
    if reply.images:
        text_tokens = max(0, reply.output_tokens - reply.image_tokens)
        usage["candidatesTokensDetails"] = [
            {"modality": "IMAGE", "tokenCount": reply.image_tokens},
            {"modality": "TEXT", "tokenCount": text_tokens},
        ]
    body: dict[str, Any] = {"usageMetadata": usage, "modelVersion": model, "responseId": response_id()}
    if reply.blocked:
        body["promptFeedback"] = {"blockReason": "SAFETY"}
        return body
    content: dict[str, Any] = {"role": "model", "parts": []}
    if reply.text is not None:
        content["parts"] = [{"text": reply.text}]
    for data, mime in reply.images:
        content["parts"].append({"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode()}})
    body["candidates"] = [{"content": content, "finishReason": reply.finish_reason or "STOP", "index": 0}]
    return body


def openai_response(reply: FakeReply, *, model: str) -> dict[str, Any]:
    """A chat.completion response body, the way the OpenAI API shapes it."""
    finish = reply.finish_reason or ("content_filter" if reply.blocked else "stop")
    content = None if reply.blocked else reply.text
    return {
        "id": "chatcmpl-" + response_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens + reply.thinking_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens + reply.thinking_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": reply.thinking_tokens},
        },
    }


_counter = iter(range(1, 1 << 62))


def response_id() -> str:
    return f"fake{next(_counter):08d}"
