"""A local HTTP server that speaks the Gemini and OpenAI wire formats, for tests and demos.

The LLM seam is the HTTP endpoint, not the SDK: tests point the real google-genai and openai clients
at this server through their base URL settings, and the SDKs build, send and parse real requests.

- Gemini: `POST /v1beta/models/{model}:generateContent` (any API version prefix is accepted); a
  reply may carry pictures as `inlineData` parts, as Gemini's image models answer.
- Gemini explicit caches: `POST .../cachedContents` makes one (its size is `fake_token_count` of its
  system instruction and contents), `GET`, `PATCH` (a new `ttl`) and `DELETE .../cachedContents/{id}`;
  a generateContent that names one in `cachedContent` adds its tokens to the prompt and reports them
  as `cachedContentTokenCount`, and one naming a cache it does not have is refused as Gemini refuses
  it (403, "CachedContent not found"). `expire_caches()` drops them all, as their TTL would.
- OpenAI: `POST /v1/chat/completions` and `POST /chat/completions` (any prefix ending in
  `/chat/completions`, so OpenRouter-style `/api/v1/...` works too).
- OpenAI transcriptions: `POST .../audio/transcriptions` (multipart, as `audio.transcriptions.create`
  sends it); the recorded `json` holds the form's fields and the file (`filename`, `content_type`,
  `size`, `data_b64`). A whisper model's `verbose_json` answer carries the language and duration.
- OpenRouter's model list: `GET .../models` answers `{"data": models}` from the `models` attribute.
- Speech (Gemini's speech output, ElevenLabs' text-to-speech; `fake_speech.py`) is answered at once,
  outside the reply queue, with a tone of `speech_seconds(text)`; `fail_next_speech` fails it.

A reply's `audio_tokens` are reported as the prompt's AUDIO modality tokens (Gemini) or the input's
audio tokens (OpenAI transcription); `audio_seconds` as a transcription billed by duration.

Replies are queued with `reply_with` (first in, first out); when the queue is empty the default reply
is used, or, when set, the `responder` (a function of the recorded request, called in the request's
handler thread, that may take its time like a real model). `fail_next(status, times)` makes the next
requests fail with that HTTP status, in the provider's error format. Every request is recorded in
`requests`. `fail_next(..., retry_after=N)` adds a `Retry-After: N` header to those failures.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cindy_site.testing.fake_speech import (  # noqa: F401 - re-exported for tests
    ELEVENLABS_PATH,
    SPEECH_RATE,
    SPEECH_SECONDS_PER_CHARACTER,
    elevenlabs_error,
    gemini_speech_response,
    is_gemini_speech,
    speech_pcm,
    speech_seconds,
)

_GEMINI_PATH = re.compile(r"^/(?:[^/]+/)?models/(?P<model>[^/:]+):generateContent$")
_CACHES_PATH = re.compile(r"^/(?:[^/]+/)?cachedContents(?:/(?P<id>[^/]+))?$")
_STATUS_NAMES = {
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
    api: str  # "gemini" or "openai"
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


@dataclass
class _Failure:
    status: int
    message: str = ""
    #: Sent as the `Retry-After` header (seconds), as providers do with a 429 or 503.
    retry_after: int | None = None


@dataclass
class _Raw:
    """A body sent as it is, e.g. a 200 that is not JSON."""

    body: bytes
    status: int = 200
    content_type: str = "application/json; charset=utf-8"


@dataclass
class _Stall:
    seconds: float


@dataclass
class _State:
    replies: deque[FakeReply] = field(default_factory=deque)
    failures: deque[_Failure | _Stall | _Raw] = field(default_factory=deque)
    default: FakeReply = field(default_factory=lambda: FakeReply(text="[]"))
    responder: Callable[[RecordedRequest], FakeReply] | None = None
    speech_failures: deque[_Failure] = field(default_factory=deque)


class FakeLLMServer:
    """A real HTTP server on 127.0.0.1 in a background thread. Use as a context manager or start/stop."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        #: The entries `GET .../models` lists, in OpenRouter's format (id, name, pricing, ...).
        self.models: list[dict[str, Any]] = []
        self._state = _State()
        #: Explicit caches by name ("cachedContents/..."): the body they were made with, plus
        #: `tokens` and `expireTime`.
        self.caches: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            # A short poll interval keeps stop() (and so each test's teardown) fast.
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-llm",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting ----------------------------------------------------------------------------

    def reply_with(
        self,
        text: str | None,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        cached_tokens: int = 0,
        thinking_tokens: int = 0,
        finish_reason: str | None = None,
        blocked: bool = False,
        audio_tokens: int = 0,
        audio_seconds: float = 0.0,
        language: str = "",
        images: tuple[tuple[bytes, str], ...] = (),
        image_tokens: int = 0,
    ) -> None:
        """Queue one reply. `blocked=True` answers as a safety block; `text=None` as an empty reply;
        `images` adds pictures (Gemini only), `image_tokens` of the output tokens being theirs. For a
        transcription, `text` is the transcript and `language` the detected language."""
        reply = FakeReply(
            text=text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached_tokens,
            thinking_tokens=thinking_tokens,
            finish_reason=finish_reason,
            blocked=blocked,
            audio_tokens=audio_tokens,
            audio_seconds=audio_seconds,
            language=language,
            images=tuple(images),
            image_tokens=image_tokens,
        )
        with self._lock:
            self._state.replies.append(reply)

    def set_default_reply(self, text: str, **usage: int) -> None:
        with self._lock:
            self._state.default = FakeReply(text=text, **usage)

    def set_responder(self, responder: Callable[[RecordedRequest], FakeReply] | None) -> None:
        """Answer requests (after any queued failures and replies) with `responder(request)`."""
        with self._lock:
            self._state.responder = responder

    def fail_next(
        self, status: int, times: int = 1, *, message: str = "", retry_after: int | None = None
    ) -> None:
        """Answer the next `times` requests with HTTP `status` in the provider's error format, with a
        `Retry-After: <retry_after>` header when given."""
        with self._lock:
            for _ in range(times):
                self._state.failures.append(
                    _Failure(status, message or f"fake failure {status}", retry_after=retry_after)
                )

    def fail_next_speech(self, status: int, times: int = 1, *, message: str = "") -> None:
        """Answer the next `times` speech requests with HTTP `status` (other requests are unaffected)."""
        with self._lock:
            for _ in range(times):
                self._state.speech_failures.append(_Failure(status, message or f"fake failure {status}"))

    def raw_next(
        self, body: str | bytes, *, status: int = 200, content_type: str = "application/json; charset=utf-8"
    ) -> None:
        """Answer the next request with `body` as it is (a malformed reply: not JSON, nested too deeply)."""
        data = body.encode() if isinstance(body, str) else body
        with self._lock:
            self._state.failures.append(_Raw(data, status, content_type))

    def stall_next(self, seconds: float, times: int = 1) -> None:
        """Hold the next `times` requests for `seconds` before answering, so client timeouts fire."""
        with self._lock:
            for _ in range(times):
                self._state.failures.append(_Stall(seconds))

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self._state.replies.clear()
            self._state.failures.clear()

    def expire_caches(self) -> None:
        """Drop every explicit cache, as their TTL running out would."""
        with self._lock:
            self.caches.clear()

    def requests_to(self, kind: str) -> list[RecordedRequest]:
        """The recorded requests of one kind: "generate" (Gemini generateContent), or "cache-create",
        "cache-get", "cache-update", "cache-delete"."""
        with self._lock:
            if kind == "generate":
                return [r for r in self.requests if r.api == "gemini" and r.path.endswith(":generateContent")]
            return [r for r in self.requests if r.api == kind]

    @property
    def last_json(self) -> Any:
        return self.requests[-1].json if self.requests else None

    # --- used by the handler ------------------------------------------------------------------

    def _next(self, recorded: RecordedRequest) -> _Failure | _Stall | _Raw | FakeReply:
        with self._lock:
            self.requests.append(recorded)
            if self._state.failures:
                return self._state.failures.popleft()
            if self._state.replies:
                return self._state.replies.popleft()
            responder = self._state.responder
            if responder is None:
                return self._state.default
        return responder(recorded)


class _Handler(BaseHTTPRequestHandler):
    owner: FakeLLMServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep test output quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        if headers.get("content-type", "").startswith("multipart/form-data"):
            body = _form(headers["content-type"], raw)
        else:
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
        gemini = _GEMINI_PATH.match(path)
        if _CACHES_PATH.match(path):
            self._cache_request("POST", path, headers, body)
            return
        if path.endswith("/audio/transcriptions"):
            api, model = "openai", (body or {}).get("model", "") if isinstance(body, dict) else ""
        elif gemini:
            api, model = "gemini", gemini.group("model")
        elif ELEVENLABS_PATH.match(path):
            voice = ELEVENLABS_PATH.match(path).group("voice")
            model = (body or {}).get("model_id", "") if isinstance(body, dict) else ""
            self._speak(RecordedRequest("POST", self.path, headers, body, "elevenlabs", model), voice=voice)
            return
        elif path.endswith("/chat/completions"):
            api, model = "openai", (body or {}).get("model", "") if isinstance(body, dict) else ""
        else:
            self._send(404, {"error": {"code": 404, "message": f"no fake route for {path}"}})
            return
        if api == "gemini" and is_gemini_speech(body):
            self._speak(RecordedRequest("POST", path, headers, body, "gemini-speech", model))
            return
        cache: dict[str, Any] | None = None
        if api == "gemini" and isinstance(body, dict) and body.get("cachedContent"):
            with self.owner._lock:
                cache = self.owner.caches.get(body["cachedContent"])
            if cache is None:
                with self.owner._lock:
                    self.owner.requests.append(RecordedRequest("POST", path, headers, body, api, model))
                failure = _Failure(403, "CachedContent not found (or permission denied)")
                self._send(403, _error_body("gemini", failure))
                return
        outcome = self.owner._next(RecordedRequest("POST", path, headers, body, api, model, cached=cache))
        if isinstance(outcome, FakeReply) and cache is not None:
            outcome = replace(
                outcome,
                input_tokens=outcome.input_tokens + cache["tokens"],
                cached_tokens=outcome.cached_tokens + cache["tokens"],
            )
        if isinstance(outcome, _Stall):
            # Wait on the stop event rather than sleeping, so stop() is never held up.
            self.owner._stopping.wait(outcome.seconds)
            self._send(504, _error_body(api, _Failure(504, "fake stall ended")))
        elif isinstance(outcome, _Failure):
            extra = {} if outcome.retry_after is None else {"Retry-After": str(outcome.retry_after)}
            self._send(outcome.status, _error_body(api, outcome), headers=extra)
        elif isinstance(outcome, _Raw):
            self._send_bytes(outcome.status, outcome.body, outcome.content_type)
        elif api == "gemini":
            self._send(200, gemini_response(outcome, model=model))
        elif path.endswith("/audio/transcriptions"):
            self._send(200, transcription_response(outcome, form=body or {}))
        else:
            self._send(200, openai_response(outcome, model=model))

    def do_PATCH(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._cache_request("PATCH", self.path.split("?", 1)[0], headers, body)

    def do_DELETE(self) -> None:  # noqa: N802
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._cache_request("DELETE", self.path.split("?", 1)[0], headers, None)

    def _cache_request(self, method: str, path: str, headers: dict[str, str], body: Any) -> None:
        """The cachedContents resource: create, get, update (ttl) and delete."""
        match = _CACHES_PATH.match(path)
        if match is None:
            self._send(404, {"error": {"code": 404, "message": f"no fake route for {method} {path}"}})
            return
        kind = {"POST": "cache-create", "GET": "cache-get", "PATCH": "cache-update", "DELETE": "cache-delete"}
        owner = self.owner
        with owner._lock:
            owner.requests.append(
                RecordedRequest(method, path, headers, body, kind[method], (body or {}).get("model", ""))
            )
            failures = owner._state.failures
            failure = failures.popleft() if failures and isinstance(failures[0], _Failure) else None
            if failure is not None:
                self._send(failure.status, _error_body("gemini", failure))
                return
            if method == "POST":
                name = f"cachedContents/{_response_id()}"
                cache = dict(body or {}, name=name, tokens=fake_token_count(body or {}))
                cache["expireTime"] = _expire_time((body or {}).get("ttl"))
                owner.caches[name] = cache
                self._send(200, _cache_body(cache))
                return
            name = f"cachedContents/{match.group('id')}"
            cache = owner.caches.get(name)
            if cache is None:
                failure = _Failure(404, f"CachedContent not found: {name}")
                self._send(404, _error_body("gemini", failure))
                return
            if method == "PATCH":
                cache["expireTime"] = _expire_time((body or {}).get("ttl"))
            elif method == "DELETE":
                del owner.caches[name]
                self._send(200, {})
                return
            self._send(200, _cache_body(cache))

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        if _CACHES_PATH.match(path):
            self._cache_request("GET", path, {k.lower(): v for k, v in self.headers.items()}, None)
            return
        if path.endswith("/models"):
            headers = {k.lower(): v for k, v in self.headers.items()}
            with self.owner._lock:
                self.owner.requests.append(RecordedRequest("GET", path, headers, None, "openrouter", ""))
            self._send(200, {"data": list(self.owner.models)})
            return
        self._send(404, {"error": {"code": 404, "message": f"no fake route for GET {path}"}})

    def _speak(self, recorded: RecordedRequest, *, voice: str = "") -> None:
        """Answer a speech request (after any queued speech failure) with its PCM (`fake_speech.py`)."""
        with self.owner._lock:
            self.owner.requests.append(recorded)
            failures = self.owner._state.speech_failures
            failure = failures.popleft() if failures else None
        if recorded.api == "elevenlabs":
            if failure is not None:
                self._send(failure.status, elevenlabs_error(failure.status, failure.message))
                return
            self._send_bytes(200, speech_pcm(str(recorded.json.get("text", ""))), "audio/pcm")
        elif failure is not None:
            self._send(failure.status, _error_body("gemini", failure))
        else:
            self._send(
                200, gemini_speech_response(recorded.json, model=recorded.model, response_id=_response_id())
            )

    def _send(self, status: int, payload: dict[str, Any], *, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(
            status, json.dumps(payload).encode(), "application/json; charset=utf-8", headers=headers
        )

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, *, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _form(content_type: str, raw: bytes) -> dict[str, Any]:
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


def _expire_time(ttl: Any) -> str:
    seconds = float(str(ttl or "3600s").rstrip("s"))
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def _cache_body(cache: dict[str, Any]) -> dict[str, Any]:
    """A CachedContent resource as the API returns it (never its contents)."""
    return {
        "name": cache["name"],
        "model": cache.get("model", ""),
        "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "updateTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "expireTime": cache["expireTime"],
        "usageMetadata": {"totalTokenCount": cache["tokens"]},
    }


def _error_body(api: str, failure: _Failure) -> dict[str, Any]:
    if api == "gemini":
        status = _STATUS_NAMES.get(failure.status, "UNKNOWN")
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
    body: dict[str, Any] = {"usageMetadata": usage, "modelVersion": model, "responseId": _response_id()}
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
        "id": "chatcmpl-" + _response_id(),
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


def _response_id() -> str:
    return f"fake{next(_counter):08d}"
