"""Gemini through google-genai: system_instruction, user/model contents, BLOCK_NONE, JSON schema."""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass
from typing import Any

from google import genai
from google.genai import _common as genai_common
from google.genai import errors as genai_errors
from google.genai import models as genai_models
from google.genai import types

from llm.errors import CacheGone, LLMConfigError, LLMError, ModelNotFound, ProviderRetryable
from llm.providers.base import Embedded, retry_after_seconds, tls_context, transport_errors
from llm.request import LLMReply, LLMRequest, Part, Turn, Usage

#: The harm categories the Gemini API accepts; each is set to BLOCK_NONE (personas decide tone).
SAFETY_CATEGORIES = (
    types.HarmCategory.HARM_CATEGORY_HARASSMENT,
    types.HarmCategory.HARM_CATEGORY_HATE_SPEECH,
    types.HarmCategory.HARM_CATEGORY_SEXUALLY_EXPLICIT,
    types.HarmCategory.HARM_CATEGORY_DANGEROUS_CONTENT,
)
_BLOCKED_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY", "RECITATION"}
_MEDIA_PREFIXES = ("image/", "video/", "audio/")
_clients: dict[tuple[str, str, float], genai.Client] = {}
_clients_lock = threading.Lock()
#: `GeminiProvider._stable_body` by (client, schema, modalities): a handful per process.
_stable_bodies: dict[tuple[int, str, tuple[str, ...] | None], dict[str, Any]] = {}


def _client(api_key: str, base_url: str, timeout: float) -> genai.Client:
    """One client per endpoint, kept alive: a collected client closes its connection pool."""
    key = (api_key, base_url, timeout)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            options = types.HttpOptions(
                base_url=base_url or None,
                api_version="v1beta",
                timeout=int(timeout * 1000),
                # Retries are ours (llm.calls), with backoff the tests can observe.
                retry_options=types.HttpRetryOptions(attempts=1),
                # The process's shared TLS context (its HTTP clients take `verify`, its WebSocket
                # transport `ssl`): the SDK would load the CA bundle twice for each client.
                client_args={"verify": tls_context()},
                async_client_args={"verify": tls_context(), "ssl": tls_context()},
            )
            client = genai.Client(api_key=api_key, http_options=options)
            _clients[key] = client
            _build_models()
        return client


def _build_models() -> None:
    """Have pydantic build the validators of the models every call uses (it builds them on first use,
    about 0.1 s), with the client: the task pool builds both before forking its workers."""
    request = LLMRequest(system="", turns=[Turn(role="user", parts=(Part(text=""),))], response_schema={})
    build_config(request, timeout=1.0, wire=wire_contents(request))
    types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}}], "usage_metadata": {}}
    )


def safety_settings() -> list[types.SafetySetting]:
    return [
        types.SafetySetting(category=c, threshold=types.HarmBlockThreshold.BLOCK_NONE)
        for c in SAFETY_CATEGORIES
    ]


def _part(part: Part) -> types.Part:
    if part.is_media:
        return types.Part.from_bytes(data=part.data, mime_type=part.mime)
    return types.Part(text=part.text)


def build_contents(request: LLMRequest) -> list[types.Content]:
    """Turns as contents: the agent's turns are `model`, everyone else's `user`; never `system`."""
    return [
        types.Content(role="model" if turn.role == "agent" else "user", parts=[_part(p) for p in turn.parts])
        for turn in request.turns
    ]


def _wire_part(part: Part) -> dict[str, Any]:
    if part.is_media:
        return {"inlineData": {"data": base64.b64encode(part.data or b"").decode(), "mime_type": part.mime}}
    return {"text": part.text}


def wire_contents(request: LLMRequest) -> list[dict[str, Any]]:
    """The contents in the API's wire format, as the SDK would send them, built without pydantic.

    The SDK validates and converts every turn through its models on each call (hundreds of
    milliseconds for a long history); these plain dicts reach the body through `extra_body`.
    """
    return [
        {"parts": [_wire_part(p) for p in turn.parts], "role": "model" if turn.role == "agent" else "user"}
        for turn in request.turns
    ]


def build_config(
    request: LLMRequest,
    *,
    timeout: float | None = None,
    wire: list[dict[str, Any]] | None = None,
    cached_content: str | None = None,
) -> types.GenerateContentConfig:
    """The request's configuration. With `cached_content` the system instruction is in the cache
    (the API refuses a request that names both)."""
    config: dict[str, Any] = {
        "safety_settings": safety_settings(),
        # No tools are declared; this only keeps the SDK from logging about function calling.
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
    }
    if cached_content:
        config["cached_content"] = cached_content
    else:
        config["system_instruction"] = request.system
    if request.response_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_schema"] = request.response_schema
    if request.response_modalities is not None:
        config["response_modalities"] = list(request.response_modalities)
    http_options: dict[str, Any] = {}
    if timeout is not None:
        # Merged with the client's options by the SDK: only this request's timeout changes.
        http_options["timeout"] = max(1, int(timeout * 1000))
    if wire is not None:
        # The documented escape hatch for request fields in the backend's own structure: it replaces
        # the body's `contents` after the SDK built it, so the SDK only converts one turn.
        http_options["extra_body"] = {"contents": wire}
    if http_options:
        config["http_options"] = types.HttpOptions(**http_options)
    return types.GenerateContentConfig(**config)


def _audio_tokens(meta: types.GenerateContentResponseUsageMetadata | None) -> int:
    """The prompt's audio tokens (`promptTokensDetails`, modality AUDIO): billed at the audio rate."""
    details = (meta.prompt_tokens_details if meta else None) or []
    return sum(d.token_count or 0 for d in details if d.modality == types.MediaModality.AUDIO)


@dataclass(frozen=True)
class CachedPrefix:
    """An explicit cache a request uses: its name, and how many leading turns of the request it holds."""

    name: str
    turns: int


@dataclass(frozen=True)
class CacheMade:
    name: str
    tokens: int


#: Keeps the SDK from logging about function calling (no tools are declared); one instance for all.
_NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


class GeminiProvider:
    name = "gemini"
    key_variable = "GOOGLE_GEMINI_API_KEY"

    def __init__(self, *, api_key: str, base_url: str = "", timeout: float = 120.0) -> None:
        if not api_key:
            raise LLMConfigError(
                f"{self.key_variable} is not set: Gemini needs an API key. Set {self.key_variable} "
                "in the environment or .env (get one at https://aistudio.google.com/apikey)"
            )
        self._client = _client(api_key, base_url, timeout)

    def _stable_body(self, request: LLMRequest) -> dict[str, Any]:
        """The body fields that change only with the reply schema and modalities (`safetySettings`,
        `generationConfig`), in the body's own structure. The SDK converts the schema into its own
        models and back on every call, which cost more CPU than the rest of the turn's request; here
        the SDK's own conversion runs once per schema, and the result goes into the body as
        `extra_body` does (`test_gemini_body_matches_the_sdk_own_conversion_of_every_turn`)."""
        schema = request.response_schema
        key = (
            id(self._client),  # the clients live as long as the process (`_client`)
            # In the schema's own key order: the SDK sends its properties in that order.
            json.dumps(schema) if schema is not None else "",
            tuple(request.response_modalities) if request.response_modalities is not None else None,
        )
        body = _stable_bodies.get(key)
        if body is None:
            config: dict[str, Any] = {"safety_settings": safety_settings()}
            if schema is not None:
                config["response_mime_type"] = "application/json"
                config["response_schema"] = json.loads(key[1])  # the SDK rewrites the dict it is given
            if request.response_modalities is not None:
                config["response_modalities"] = list(request.response_modalities)
            body = {}
            generation = genai_models._GenerateContentConfig_to_mldev(
                self._client._api_client, types.GenerateContentConfig(**config), body
            )
            body["generationConfig"] = generation
            body = genai_common.encode_unserializable_types(genai_common.convert_to_dict(body))
            with _clients_lock:
                _stable_bodies[key] = body
        return body

    def _config(
        self, request: LLMRequest, *, timeout: float | None, cached_content: str | None
    ) -> types.GenerateContentConfig:
        """`build_config(request, wire=...)`'s request, with the schema's fields from `_stable_body`
        and the system instruction in the body's own structure: the SDK converts only one turn."""
        body: dict[str, Any] = {**self._stable_body(request), "contents": wire_contents(request)}
        if not cached_content:
            body["systemInstruction"] = {"parts": [{"text": request.system}], "role": "user"}
        http_options: dict[str, Any] = {"extra_body": body}
        if timeout is not None:
            http_options["timeout"] = max(1, int(timeout * 1000))
        return types.GenerateContentConfig(
            cached_content=cached_content or None,
            automatic_function_calling=_NO_AFC,
            http_options=types.HttpOptions(**http_options),
        )

    def supports_media(self, mime: str) -> bool:
        return mime.startswith(_MEDIA_PREFIXES)

    def generate(
        self,
        request: LLMRequest,
        *,
        model: str,
        timeout: float | None = None,
        cache: CachedPrefix | None = None,
    ) -> LLMReply:
        """One attempt; with `cache`, the request's first `cache.turns` turns and its system
        instruction are the explicit cache `cache.name`, and only the rest is sent. A cache the API no
        longer has raises CacheGone."""
        if cache is not None:
            request = LLMRequest(
                system=request.system,
                turns=request.turns[cache.turns :],
                response_schema=request.response_schema,
                response_modalities=request.response_modalities,
            )
        try:
            # The SDK builds the body from the last turn only; `extra_body` carries the whole history
            # already in wire format (see wire_contents).
            last = LLMRequest(system=request.system, turns=request.turns[-1:])
            if request.turns:
                config = self._config(
                    request, timeout=timeout, cached_content=cache.name if cache is not None else None
                )
            else:
                config = build_config(request, timeout=timeout, cached_content=cache.name if cache else None)
            response = self._client.models.generate_content(
                model=model, contents=build_contents(last), config=config
            )
        except genai_errors.APIError as exc:
            if cache is not None and _cache_missing(exc):
                raise CacheGone(f"Gemini no longer has {cache.name} ({exc.code}: {exc.message})") from exc
            raise self._translate(exc) from exc
        except transport_errors() as exc:
            raise ProviderRetryable(f"Gemini request failed: {type(exc).__name__}: {exc}") from exc
        return self._reply(response, model)

    def cache_create(self, request: LLMRequest, *, model: str, turns: int, ttl_seconds: int) -> CacheMade:
        """Make an explicit cache of the request's system instruction and first `turns` turns."""
        prefix = LLMRequest(system=request.system, turns=request.turns[:turns])
        try:
            made = self._client.caches.create(
                model=model,
                config=types.CreateCachedContentConfig(
                    contents=build_contents(prefix),
                    system_instruction=request.system,
                    ttl=f"{int(ttl_seconds)}s",
                ),
            )
        except genai_errors.APIError as exc:
            raise self._translate(exc) from exc
        meta = made.usage_metadata
        return CacheMade(name=made.name or "", tokens=(meta.total_token_count or 0) if meta else 0)

    def cache_extend(self, name: str, *, ttl_seconds: int) -> None:
        """Keep the cache `ttl_seconds` from now. CacheGone when the API no longer has it."""
        try:
            self._client.caches.update(
                name=name, config=types.UpdateCachedContentConfig(ttl=f"{ttl_seconds}s")
            )
        except genai_errors.APIError as exc:
            if _cache_missing(exc):
                raise CacheGone(f"Gemini no longer has {name} ({exc.code}: {exc.message})") from exc
            raise self._translate(exc) from exc

    def cache_delete(self, name: str) -> None:
        """Delete the cache (storage stops being billed); one already gone is fine."""
        try:
            self._client.caches.delete(name=name)
        except genai_errors.APIError as exc:
            if not _cache_missing(exc):
                raise self._translate(exc) from exc

    def embed(
        self, texts: list[str], *, model: str, dimensions: int, query: bool, timeout: float | None = None
    ) -> Embedded:
        """Embed `texts` with `model` (`embed_content`: one `batchEmbedContents` request), as a search's
        query or as stored documents (the API's task types), at `dimensions`."""
        config = types.EmbedContentConfig(
            output_dimensionality=dimensions,
            task_type="RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT",
            http_options=types.HttpOptions(timeout=int(timeout * 1000)) if timeout else None,
        )
        try:
            response = self._client.models.embed_content(model=model, contents=list(texts), config=config)
        except genai_errors.APIError as exc:
            raise self._translate(exc) from exc
        except transport_errors() as exc:
            raise ProviderRetryable(f"Gemini request failed: {type(exc).__name__}: {exc}") from exc
        meta = response.usage_metadata
        return Embedded(
            vectors=[list(e.values or []) for e in response.embeddings or []],
            input_tokens=meta.prompt_token_count if meta and meta.prompt_token_count is not None else None,
        )

    def _translate(self, exc: genai_errors.APIError) -> Exception:
        code = exc.code or 0
        if code == 429 or code >= 500 or code == 408:
            return ProviderRetryable(
                f"Gemini answered {code}: {exc.message or exc}", retry_after=retry_after_seconds(exc.response)
            )
        if code in (401, 403):
            return LLMConfigError(
                f"Gemini refused the key in {self.key_variable} ({code}: {exc.message}): check the key"
            )
        if code == 404:
            return ModelNotFound(f"Gemini answered 404, no such model: {exc.message or exc}")
        return LLMError(f"Gemini answered {code}: {exc.message or exc}")

    def _reply(self, response: types.GenerateContentResponse, model: str) -> LLMReply:
        meta = response.usage_metadata
        usage = Usage(
            input_tokens=(meta.prompt_token_count or 0) if meta else 0,
            output_tokens=(meta.candidates_token_count or 0) if meta else 0,
            cached_tokens=(meta.cached_content_token_count or 0) if meta else 0,
            thinking_tokens=(meta.thoughts_token_count or 0) if meta else 0,
            audio_tokens=_audio_tokens(meta),
            image_output_tokens=_image_tokens(meta),
        )
        reply = LLMReply(text="", usage=usage, provider=self.name, model=model)
        if not response.candidates:
            feedback = response.prompt_feedback
            reason = feedback.block_reason if feedback and feedback.block_reason else None
            reply.status = "blocked" if reason else "empty"
            reply.finish_reason = str(reason.value if hasattr(reason, "value") else reason or "")
            return reply
        candidate = response.candidates[0]
        finish = candidate.finish_reason
        reply.finish_reason = str(finish.value if hasattr(finish, "value") else finish or "")
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        reply.text = "".join(p.text for p in parts if p.text and not p.thought)
        reply.images = [
            (p.inline_data.data, p.inline_data.mime_type or "")
            for p in parts
            if p.inline_data is not None and p.inline_data.data and not p.thought
        ]
        if reply.images:
            return reply
        if reply.finish_reason in _BLOCKED_FINISH and not reply.text.strip():
            reply.status = "blocked"
        elif not reply.text.strip():
            reply.status = "empty"
        return reply


def _cache_missing(exc: genai_errors.APIError) -> bool:
    """Whether the API says a named cache does not exist: 404, or (as Gemini answers for an expired
    one) 403 or 400 whose message names the cached content."""
    code = exc.code or 0
    return code == 404 or (code in (400, 403) and "cached" in str(exc.message or "").lower())


def _image_tokens(meta: types.GenerateContentResponseUsageMetadata | None) -> int:
    """The image output tokens of a reply (Gemini reports output tokens per modality)."""
    details = (meta.candidates_tokens_details if meta else None) or []
    return sum(
        d.token_count or 0 for d in details if str(getattr(d.modality, "value", d.modality)) == "IMAGE"
    )
