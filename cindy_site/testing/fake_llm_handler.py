"""The fake LLM server's HTTP handler: routes each request to a generate (Gemini, OpenAI, Anthropic),
transcription, speech, explicit-cache or model-list answer, as `cindy_site.testing.fake_llm` describes them."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from cindy_site.testing.fake_llm_anthropic import anthropic_response, is_anthropic_path
from cindy_site.testing.fake_llm_wire import (
    CACHES_PATH,
    GEMINI_PATH,
    Failure,
    FakeReply,
    Raw,
    RecordedRequest,
    Stall,
    cache_body,
    error_body,
    expire_time,
    fake_token_count,
    form_body,
    gemini_response,
    openai_response,
    response_id,
    transcription_response,
)
from cindy_site.testing.fake_speech import (
    ELEVENLABS_PATH,
    elevenlabs_error,
    gemini_speech_response,
    is_gemini_speech,
    speech_pcm,
)


class FakeLLMHandler(BaseHTTPRequestHandler):
    """One request to the fake server; `owner` is the `FakeLLMServer` whose queues answer it."""

    #: The `cindy_site.testing.fake_llm.FakeLLMServer` it answers for (not imported: that module imports
    #: this one).
    owner: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep test output quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        if headers.get("content-type", "").startswith("multipart/form-data"):
            body = form_body(headers["content-type"], raw)
        else:
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
        gemini = GEMINI_PATH.match(path)
        if CACHES_PATH.match(path):
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
        elif is_anthropic_path(path):
            api, model = "anthropic", (body or {}).get("model", "") if isinstance(body, dict) else ""
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
                failure = Failure(403, "CachedContent not found (or permission denied)")
                self._send(403, error_body("gemini", failure))
                return
        outcome = self.owner._next(RecordedRequest("POST", path, headers, body, api, model, cached=cache))
        if isinstance(outcome, FakeReply) and cache is not None:
            outcome = replace(
                outcome,
                input_tokens=outcome.input_tokens + cache["tokens"],
                cached_tokens=outcome.cached_tokens + cache["tokens"],
            )
        if isinstance(outcome, Stall):
            # Wait on the stop event rather than sleeping, so stop() is never held up.
            self.owner._stopping.wait(outcome.seconds)
            # A client that gave up meanwhile (what a stall is for) has closed the connection.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(504, error_body(api, Failure(504, "fake stall ended")))
        elif isinstance(outcome, Failure):
            extra = {} if outcome.retry_after is None else {"Retry-After": str(outcome.retry_after)}
            self._send(outcome.status, error_body(api, outcome), headers=extra)
        elif isinstance(outcome, Raw):
            self._send_bytes(outcome.status, outcome.body, outcome.content_type)
        elif api == "gemini":
            self._send(200, gemini_response(outcome, model=model))
        elif api == "anthropic":
            reply = anthropic_response(
                outcome,
                body=body or {},
                model=model,
                cache=self.owner.prompt_cache,
                response_id=response_id(),
            )
            self._send(200, reply)
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
        match = CACHES_PATH.match(path)
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
            failure = failures.popleft() if failures and isinstance(failures[0], Failure) else None
            if failure is not None:
                self._send(failure.status, error_body("gemini", failure))
                return
            if method == "POST":
                name = f"cachedContents/{response_id()}"
                cache = dict(body or {}, name=name, tokens=fake_token_count(body or {}))
                cache["expireTime"] = expire_time((body or {}).get("ttl"))
                owner.caches[name] = cache
                self._send(200, cache_body(cache))
                return
            name = f"cachedContents/{match.group('id')}"
            cache = owner.caches.get(name)
            if cache is None:
                failure = Failure(404, f"CachedContent not found: {name}")
                self._send(404, error_body("gemini", failure))
                return
            if method == "PATCH":
                cache["expireTime"] = expire_time((body or {}).get("ttl"))
            elif method == "DELETE":
                del owner.caches[name]
                self._send(200, {})
                return
            self._send(200, cache_body(cache))

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        if CACHES_PATH.match(path):
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
            self._send(failure.status, error_body("gemini", failure))
        else:
            self._send(
                200, gemini_speech_response(recorded.json, model=recorded.model, response_id=response_id())
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
