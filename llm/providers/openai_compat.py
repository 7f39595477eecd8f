"""OpenAI-compatible chat completions (Grok, OpenAI, OpenRouter, Ollama, vLLM) through the openai SDK.

Structured output on the endpoints of CINDY_LLM_ENDPOINTS and the admin's table: a request with a
reply schema carries it as `response_format` (`json_schema`; the task list, an array, wrapped as the
`tasks` property of an object, and the reply unwrapped again), unless the endpoint's mode is "off".
In mode "auto" a server that refuses it (HTTP 400 or 422 whose message names `response_format`,
`json_schema`, "response format" or "structured output") is asked again at once without it, and one
that ignores it (a reply that is not JSON but holds `# «kind»` task blocks) is read as it is; either
way this process stops sending it to that endpoint (name and base URL), says so once in an INFO log
line and notes it on that call (`LLMReply.notes`). The request without it is the one every endpoint
got before: the prompt teaches the format, `llm.parsing` reads JSON or the legacy Markdown blocks.
The built-in providers (Grok, OpenAI, OpenRouter) follow the prompt alone, as before.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai

from llm.errors import LLMConfigError, LLMError, ModelNotFound, ProviderRetryable
from llm.legacy_headings import has_task_heading
from llm.providers.base import Embedded, retry_after_seconds, sdk_client_options
from llm.providers.schema import is_wrapped, object_schema, unwrapped_text
from llm.request import LLMReply, LLMRequest, Turn, Usage

logger = logging.getLogger(__name__)
_clients: dict[tuple[str, str, float], openai.OpenAI] = {}
_clients_lock = threading.Lock()
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
#: What the transcription endpoint takes (its documented file types), as the upload's file name.
TRANSCRIPTION_FORMATS = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "video/mp4": "mp4",
    "video/webm": "webm",
}


def _client(api_key: str, base_url: str, timeout: float) -> openai.OpenAI:
    key = (api_key, base_url, timeout)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = openai.OpenAI(
                **sdk_client_options(
                    openai.DefaultHttpxClient, api_key=api_key, base_url=base_url, timeout=timeout
                )
            )
            _clients[key] = client
        return client


def _content(turn: Turn) -> str | list[dict[str, Any]]:
    if not any(p.is_media for p in turn.parts):
        return "\n".join(p.text for p in turn.parts)
    items: list[dict[str, Any]] = []
    for part in turn.parts:
        if not part.is_media:
            items.append({"type": "text", "text": part.text})
            continue
        encoded = base64.b64encode(part.data or b"").decode()
        if part.mime.startswith("image/"):
            items.append({"type": "image_url", "image_url": {"url": f"data:{part.mime};base64,{encoded}"}})
        else:
            items.append(
                {"type": "input_audio", "input_audio": {"data": encoded, "format": _AUDIO_FORMATS[part.mime]}}
            )
    return items


def build_messages(request: LLMRequest) -> list[dict[str, Any]]:
    """A system message, then the turns as user/assistant messages."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for turn in request.turns:
        messages.append({"role": "assistant" if turn.role == "agent" else "user", "content": _content(turn)})
    return messages


#: Words of a 400/422 error that say the server refused the `response_format` itself.
STRUCTURED_REFUSAL_WORDS = ("response_format", "json_schema", "response format", "structured output")
#: The endpoints (name, base URL) this process no longer sends `response_format`, and why.
_unstructured: dict[tuple[str, str], str] = {}
_unstructured_lock = threading.Lock()


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The reply schema as a chat-completions `response_format`."""
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": object_schema(schema)}}


def structured_given_up(name: str, base_url: str) -> str | None:
    """Why this process no longer sends `response_format` to the endpoint, or None when it does."""
    return _unstructured.get((name, base_url))


def structured_forget() -> None:
    """Forget the endpoints that refused structured output (tests; a restart does the same)."""
    with _unstructured_lock:
        _unstructured.clear()


def _names_structured(exc: openai.APIStatusError) -> bool:
    text = f"{exc.message} {exc.body}".lower()
    return any(word in text for word in STRUCTURED_REFUSAL_WORDS)


def _ignored_schema(text: str) -> bool:
    """A reply to a request with `response_format` that is not JSON but legacy Markdown task blocks."""
    try:
        json.loads(text)
    except ValueError:
        return has_task_heading(text.strip())
    return False


class OpenAICompatibleProvider:
    """One class for every OpenAI-compatible endpoint; `name` says which (grok, openai, openrouter, or
    an endpoint's name). `structured` ("auto", "on" or "off") says whether a reply schema is sent as
    `response_format`; `structured_variable` names where that is set, for error messages."""

    def __init__(
        self,
        *,
        name: str,
        key_variable: str,
        api_key: str,
        base_url: str,
        timeout: float = 120.0,
        structured: str = "off",
        structured_variable: str = "",
    ):
        self.name = name
        self.key_variable = key_variable
        self.base_url = base_url
        self.structured = structured
        self.structured_variable = structured_variable
        if not api_key:
            raise LLMConfigError(
                f"{key_variable} is not set: the {name} provider needs an API key. Set {key_variable} in "
                "the environment or .env (any non-empty value for local servers that need none, e.g. Ollama)"
            )
        self._client = _client(api_key, base_url, timeout)

    def supports_media(self, mime: str) -> bool:
        return mime.startswith("image/") or mime in _AUDIO_FORMATS

    def generate(self, request: LLMRequest, *, model: str, timeout: float | None = None) -> LLMReply:
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        if request.transcription:
            return self._transcribe(request, model=model, extra=extra)
        messages = build_messages(request)
        schema = request.response_schema if self._sends_schema(request) else None
        notes: list[str] = []
        with self._errors():
            if schema is None:
                response = self._create(messages, model=model, extra=extra)
            else:
                try:
                    response = self._create(
                        messages, model=model, extra={**extra, "response_format": response_format(schema)}
                    )
                except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                    if not _names_structured(exc):
                        raise
                    detail = str(exc.message).removeprefix(f"Error code: {exc.status_code} - ")[:200]
                    refusal = f"refused response_format ({exc.status_code}: {detail})"
                    if self.structured == "on":
                        raise LLMError(
                            f"{self.name} {refusal}: set {self.structured_variable} to auto (fall back to "
                            "the prompt's format) or off"
                        ) from exc
                    notes.append(self._give_up_structured(refusal))
                    schema = None
                    response = self._create(messages, model=model, extra=extra)
        reply = self._reply(response, model)
        if schema is not None and is_wrapped(schema):
            reply.text = unwrapped_text(reply.text)
        if schema is not None and self.structured == "auto" and _ignored_schema(reply.text):
            notes.append(self._give_up_structured("ignored response_format (a reply of `# «kind»` blocks)"))
        reply.notes = notes
        return reply

    def _create(self, messages: list[dict[str, Any]], *, model: str, extra: dict[str, Any]) -> Any:
        # The SDK walks every message against its typed schema (about 0.2 ms each); it sees only the
        # last one, and the documented `extra_body` puts the whole list, already in wire format, into
        # the body in its place.
        return self._client.chat.completions.create(
            model=model, messages=messages[-1:], extra_body={"messages": messages}, **extra
        )

    def _sends_schema(self, request: LLMRequest) -> bool:
        if request.response_schema is None or self.structured == "off":
            return False
        return self.structured == "on" or structured_given_up(self.name, self.base_url) is None

    def _give_up_structured(self, why: str) -> str:
        """Stop sending `response_format` to this endpoint in this process; the note for the call (the
        INFO line only the first time)."""
        key = (self.name, self.base_url)
        with _unstructured_lock:
            first = key not in _unstructured
            _unstructured.setdefault(key, why)
        note = (
            f"{self.name} {why}: answered through the prompt's format; this process no longer sends it "
            f"response_format ({self.structured_variable}: on to insist, off to stop trying)"
        )
        if first:
            logger.info("%s", note)
        return note

    def _transcribe(self, request: LLMRequest, *, model: str, extra: dict[str, Any]) -> LLMReply:
        """`audio.transcriptions.create` (multipart `audio/transcriptions`) for the request's audio part.

        The reply's text is JSON, `{"transcript": ..., "language": ...}`, as Gemini answers the same
        request; whisper models are asked for `verbose_json`, which carries the language.
        """
        audio = next((p for turn in request.turns for p in turn.parts if p.is_media), None)
        if audio is None or audio.mime not in TRANSCRIPTION_FORMATS:
            raise LLMError(
                f"{self.name}: a transcription needs one audio or video part of "
                f"{', '.join(sorted(TRANSCRIPTION_FORMATS))}; got {audio.mime if audio else 'none'}"
            )
        options: dict[str, Any] = {"response_format": "verbose_json"} if model.startswith("whisper") else {}
        upload = (f"voice.{TRANSCRIPTION_FORMATS[audio.mime]}", audio.data or b"", audio.mime)
        with self._errors():
            response = self._client.audio.transcriptions.create(model=model, file=upload, **options, **extra)
        return self._transcription_reply(response, model)

    def _transcription_reply(self, response: Any, model: str) -> LLMReply:
        text = (getattr(response, "text", "") or "").strip()
        language = getattr(response, "language", "") or ""
        if not language:
            detected = getattr(response, "languages", None) or []
            language = detected[0].code if detected else ""
        usage = Usage()
        billed = getattr(response, "usage", None)
        if billed is not None and billed.type == "tokens":
            details = billed.input_token_details
            usage = Usage(
                input_tokens=billed.input_tokens,
                output_tokens=billed.output_tokens,
                audio_tokens=(details.audio_tokens or 0) if details else 0,
            )
        elif billed is not None and billed.type == "duration":
            usage = Usage(audio_seconds=float(billed.seconds))
        elif getattr(response, "duration", None):
            usage = Usage(audio_seconds=float(response.duration))  # billed by duration, not reported
        reply = LLMReply(
            text=json.dumps({"transcript": text, "language": language}, ensure_ascii=False),
            usage=usage,
            provider=self.name,
            model=model,
        )
        if not text:
            reply.status = "empty"
        return reply

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """The SDK's errors as ours: retryable, a key problem, or a refusal no retry fixes."""
        try:
            yield
        except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as exc:
            # APIConnectionError covers APITimeoutError.
            raise ProviderRetryable(
                f"{self.name} request failed: {type(exc).__name__}: {exc}",
                retry_after=retry_after_seconds(getattr(exc, "response", None)),
            ) from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise LLMConfigError(
                f"{self.name} refused the key in {self.key_variable} ({exc.status_code}): check the key"
            ) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 408:
                raise ProviderRetryable(
                    f"{self.name} answered {exc.status_code}", retry_after=retry_after_seconds(exc.response)
                ) from exc
            if exc.status_code == 404:
                raise ModelNotFound(f"{self.name} answered 404, no such model: {exc.message}") from exc
            raise LLMError(f"{self.name} answered {exc.status_code}: {exc.message}") from exc

    def embed(
        self, texts: list[str], *, model: str, dimensions: int, query: bool, timeout: float | None = None
    ) -> Embedded:
        """Embed `texts` with `model` (`embeddings.create`: one `/embeddings` request) at `dimensions`;
        `query` makes no difference on this API."""
        extra = {"timeout": timeout} if timeout else {}
        with self._errors():
            response = self._client.embeddings.create(
                model=model, input=list(texts), dimensions=dimensions, encoding_format="float", **extra
            )
        ordered = sorted(response.data, key=lambda item: item.index)
        usage = response.usage
        return Embedded(
            vectors=[list(item.embedding) for item in ordered],
            input_tokens=usage.prompt_tokens if usage is not None else None,
        )

    def _reply(self, response: Any, model: str) -> LLMReply:
        usage = Usage()
        if response.usage is not None:
            details = response.usage.completion_tokens_details
            prompt_details = response.usage.prompt_tokens_details
            reasoning = (details.reasoning_tokens or 0) if details else 0
            usage = Usage(
                input_tokens=response.usage.prompt_tokens or 0,
                output_tokens=max(0, (response.usage.completion_tokens or 0) - reasoning),
                cached_tokens=(prompt_details.cached_tokens or 0) if prompt_details else 0,
                thinking_tokens=reasoning,
            )
        reply = LLMReply(text="", usage=usage, provider=self.name, model=model)
        if not response.choices:
            reply.status = "empty"
            return reply
        choice = response.choices[0]
        reply.finish_reason = choice.finish_reason or ""
        reply.text = choice.message.content or ""
        if choice.finish_reason == "content_filter" or (choice.message.refusal and not reply.text):
            reply.status = "blocked"
        elif not reply.text.strip():
            reply.status = "empty"
        return reply
