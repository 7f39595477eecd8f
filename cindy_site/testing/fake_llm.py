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
- Anthropic: `POST .../v1/messages` (`fake_llm_anthropic.py`: tool use, usage, errors, and a stand-in
  prompt cache, `prompt_cache`, that reads and writes the prefixes up to `cache_control` breakpoints).
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

`refuse_response_format(status, message)` answers every chat completion that carries a
`response_format` with that error, as a server without structured output does (llama.cpp's and older
servers' 400); `refuse_response_format(None)` accepts it again. With `times=N` only the next N such
requests are refused; `response_format_refusals_left()` says how many of them were never requested.
The refused requests are recorded.

`fail_model(model, status, times)` fails only the requests for one model (a route's outage while the
other routes answer): the next `times` of them, or every one until `recover_model(model)` when
`times` is None. They are answered before the queued failures and replies, which they leave alone;
`model_failures_left(model)` says how many of a counted outage were never requested.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from cindy_site.testing.fake_llm_anthropic import PromptCache
from cindy_site.testing.fake_llm_handler import FakeLLMHandler
from cindy_site.testing.fake_llm_wire import (  # noqa: F401 - the wire formats, re-exported for tests
    Failure,
    FakeReply,
    Raw,
    RecordedRequest,
    Stall,
    fake_token_count,
    gemini_response,
    openai_response,
    transcription_response,
)
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


@dataclass
class _State:
    replies: deque[FakeReply] = field(default_factory=deque)
    failures: deque[Failure | Stall | Raw] = field(default_factory=deque)
    default: FakeReply = field(default_factory=lambda: FakeReply(text="[]"))
    responder: Callable[[RecordedRequest], FakeReply] | None = None
    speech_failures: deque[Failure] = field(default_factory=deque)
    #: model -> (its failure, how many requests are left to fail; None: until recover_model)
    model_failures: dict[str, tuple[Failure, int | None]] = field(default_factory=dict)
    #: The error for a chat completion with a `response_format` (None: accepted, the reply as scripted).
    response_format_refusal: Failure | None = None
    #: How many more such requests are refused (None: every one, until accepted again).
    response_format_refusals: int | None = None


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
        #: Anthropic's prompt cache: the prefixes up to the breakpoints of the requests so far.
        self.prompt_cache = PromptCache()
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

        class Handler(FakeLLMHandler):
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
        cache_write_tokens: int = 0,
    ) -> None:
        """Queue one reply. `blocked=True` answers as a safety block; `text=None` as an empty reply;
        `images` adds pictures (Gemini only), `image_tokens` of the output tokens being theirs. For a
        transcription, `text` is the transcript and `language` the detected language.
        `cache_write_tokens`: input written to the prompt cache (Anthropic), on top of the stand-in's."""
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
            cache_write_tokens=cache_write_tokens,
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
                    Failure(status, message or f"fake failure {status}", retry_after=retry_after)
                )

    def fail_model(
        self,
        model: str,
        status: int = 503,
        times: int | None = 1,
        *,
        message: str = "",
        retry_after: int | None = None,
    ) -> None:
        """Answer the next `times` requests for `model` (every one, until `recover_model`, when `times`
        is None) with HTTP `status` in the provider's error format; requests for other models are
        answered as usual. A second call for the same model replaces the first."""
        if not model:
            raise ValueError("fail_model needs the model whose requests fail, e.g. gemini-2.5-flash")
        if times is not None and times < 1:
            raise ValueError(
                f"fail_model times is {times!r}: give 1 or more, or None for an open-ended outage"
            )
        failure = Failure(status, message or f"fake failure {status} of {model}", retry_after=retry_after)
        with self._lock:
            self._state.model_failures[model] = (failure, times)

    def recover_model(self, model: str) -> int | None:
        """End `model`'s outage; returns how many of its counted failures were never requested (None
        for an open-ended one, 0 when none was set)."""
        with self._lock:
            _failure, left = self._state.model_failures.pop(model, (None, 0))
        return left

    def model_failures_left(self, model: str) -> int | None:
        """How many requests for `model` are still to fail (None: until recover_model; 0: none)."""
        with self._lock:
            return self._state.model_failures.get(model, (None, 0))[1]

    def refuse_response_format(
        self,
        status: int | None = 400,
        *,
        message: str = "response_format of type json_schema is not supported",
        times: int | None = None,
    ) -> None:
        """Answer every chat completion carrying a `response_format` with HTTP `status` (None: accept
        it again), or only the next `times` of them; other requests are answered as usual."""
        if times is not None and times < 1:
            raise ValueError(f"refuse_response_format times is {times!r}: give 1 or more, or None for all")
        with self._lock:
            self._state.response_format_refusal = None if status is None else Failure(status, message)
            self._state.response_format_refusals = None if status is None else times

    def response_format_refusals_left(self) -> int | None:
        """How many counted refusals of `response_format` were never requested (None: refusing every
        one; 0: none left)."""
        with self._lock:
            if self._state.response_format_refusal is None:
                return 0
            return self._state.response_format_refusals

    def fail_next_speech(self, status: int, times: int = 1, *, message: str = "") -> None:
        """Answer the next `times` speech requests with HTTP `status` (other requests are unaffected)."""
        with self._lock:
            for _ in range(times):
                self._state.speech_failures.append(Failure(status, message or f"fake failure {status}"))

    def raw_next(
        self, body: str | bytes, *, status: int = 200, content_type: str = "application/json; charset=utf-8"
    ) -> None:
        """Answer the next request with `body` as it is (a malformed reply: not JSON, nested too deeply)."""
        data = body.encode() if isinstance(body, str) else body
        with self._lock:
            self._state.failures.append(Raw(data, status, content_type))

    def stall_next(self, seconds: float, times: int = 1) -> None:
        """Hold the next `times` requests for `seconds` before answering, so client timeouts fire."""
        with self._lock:
            for _ in range(times):
                self._state.failures.append(Stall(seconds))

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self._state.replies.clear()
            self._state.failures.clear()
            self._state.model_failures.clear()

    def expire_caches(self) -> None:
        """Drop every explicit cache and Anthropic's prompt cache, as their TTL running out would."""
        with self._lock:
            self.caches.clear()
        self.prompt_cache.clear()

    def requests_to(self, kind: str) -> list[RecordedRequest]:
        """The recorded requests of one kind: "generate" (Gemini generateContent), "anthropic"
        (Messages API), or "cache-create", "cache-get", "cache-update", "cache-delete"."""
        with self._lock:
            if kind == "generate":
                return [r for r in self.requests if r.api == "gemini" and r.path.endswith(":generateContent")]
            return [r for r in self.requests if r.api == kind]

    @property
    def last_json(self) -> Any:
        return self.requests[-1].json if self.requests else None

    # --- used by the handler ------------------------------------------------------------------

    def _next(self, recorded: RecordedRequest) -> Failure | Stall | Raw | FakeReply:
        with self._lock:
            self.requests.append(recorded)
            refusal = self._state.response_format_refusal
            if refusal is not None and isinstance(recorded.json, dict) and "response_format" in recorded.json:
                if recorded.path.endswith("/chat/completions"):
                    left = self._state.response_format_refusals
                    if left is not None and left <= 1:
                        self._state.response_format_refusal = None
                        self._state.response_format_refusals = None
                    elif left is not None:
                        self._state.response_format_refusals = left - 1
                    return refusal
            outage = self._state.model_failures.get(recorded.model)
            if outage is not None:
                failure, left = outage
                if left is not None and left <= 1:
                    del self._state.model_failures[recorded.model]
                elif left is not None:
                    self._state.model_failures[recorded.model] = (failure, left - 1)
                return failure
            if self._state.failures:
                return self._state.failures.popleft()
            if self._state.replies:
                return self._state.replies.popleft()
            responder = self._state.responder
            if responder is None:
                return self._state.default
        return responder(recorded)
