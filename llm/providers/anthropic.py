"""Claude through Anthropic's Messages API with the anthropic SDK.

- The system instruction is one system block; the turns are user/assistant messages (consecutive
  turns of one role are one message, as the API would join them anyway), each turn's text one block.
- Prompt caching: the API caches a request's prefix (tools, then system, then messages) up to each
  `cache_control` breakpoint. Two breakpoints mark the prefix the prompt builder keeps stable (see
  `llm.prompt.builder`): the end of the system block, and the end of the history
  (`LLMRequest.stable_turns`). The next turn of the conversation repeats both, its history only
  longer, so it reads the earlier entries from the cache and writes the longer one
  (`cache_read_input_tokens`, `cache_creation_input_tokens`).
- The reply schema is enforced as a tool the model must call (`tool_choice`), whose input schema is
  the reply schema in JSON Schema; the reply text is the tool's input as JSON. A schema whose root is
  not an object (the task list is an array) is the tool input's `tasks` property.
- Images and PDF or plain-text documents are base64 content blocks.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic

from llm.errors import LLMConfigError, LLMError, ModelNotFound, ProviderRetryable
from llm.providers.base import retry_after_seconds, sdk_client_options
from llm.providers.schema import WRAPPED_FIELD, is_wrapped, object_schema
from llm.request import LLMReply, LLMRequest, Part, Usage

#: The tool whose input is the reply, when the request has a reply schema.
REPLY_TOOL = "reply"
REPLY_TOOL_DESCRIPTION = "Give your reply: the JSON your instructions describe, in this tool's input."
#: The breakpoint type: cached for 5 minutes from its last use, written at 1.25 times the input price.
EPHEMERAL = {"type": "ephemeral"}
#: The API wants a conversation to open with a user message; a history that starts with one of the
#: agent's own messages gets this user message before it (the same on every turn: it stays cached).
HISTORY_OPENING = "(The conversation so far.)"
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
DOCUMENT_TYPES = frozenset({"application/pdf", "text/plain"})
KEY_VARIABLE = "ANTHROPIC_API_KEY"

_clients: dict[tuple[str, str, float], anthropic.Anthropic] = {}
_clients_lock = threading.Lock()


def _client(api_key: str, base_url: str, timeout: float) -> anthropic.Anthropic:
    """One client per endpoint, kept alive: a collected client closes its connection pool."""
    key = (api_key, base_url, timeout)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = anthropic.Anthropic(
                **sdk_client_options(
                    anthropic.DefaultHttpxClient, api_key=api_key, base_url=base_url, timeout=timeout
                )
            )
            _clients[key] = client
        return client


def reply_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """The tool the model answers through: the schema itself when its root is an object, else the
    schema as the `tasks` property of one."""
    converted = object_schema(schema)
    return {"name": REPLY_TOOL, "description": REPLY_TOOL_DESCRIPTION, "input_schema": converted}


def content_block(part: Part) -> dict[str, Any]:
    """One part as a content block: text, a base64 image, or a document. Raises LLMError for a media
    type the API does not take (`supports_media` says which it does)."""
    if not part.is_media:
        return {"type": "text", "text": part.text}
    data = part.data or b""
    if part.mime in IMAGE_TYPES:
        source = {"type": "base64", "media_type": part.mime, "data": base64.b64encode(data).decode()}
        return {"type": "image", "source": source}
    if part.mime == "application/pdf":
        source = {"type": "base64", "media_type": part.mime, "data": base64.b64encode(data).decode()}
        return {"type": "document", "source": source}
    if part.mime == "text/plain":
        source = {"type": "text", "media_type": "text/plain", "data": data.decode("utf-8", "replace")}
        return {"type": "document", "source": source}
    raise LLMError(
        f"anthropic: Claude models do not take {part.mime or 'untyped'} input (images: "
        f"{', '.join(sorted(IMAGE_TYPES))}; documents: {', '.join(sorted(DOCUMENT_TYPES))})"
    )


def build_system(request: LLMRequest) -> list[dict[str, Any]]:
    """The system instruction as one block, with the first cache breakpoint: it and the tool before
    it are the same on every turn of the conversation."""
    if not request.system.strip():
        return []
    return [{"type": "text", "text": request.system, "cache_control": dict(EPHEMERAL)}]


def build_messages(request: LLMRequest) -> list[dict[str, Any]]:
    """The turns as messages: the agent's as `assistant`, everyone else's as `user`; consecutive turns
    of one role joined; text parts with no text left out (the API refuses empty text blocks).

    The last block of the stable turns (the history) carries the second cache breakpoint. The API
    looks for an earlier cache entry at most 20 blocks before a breakpoint, so a turn's text parts
    are one block (joined by newlines, as the OpenAI-compatible providers join them): the history a
    conversation adds between two turns then stays well within that reach.
    """
    messages: list[dict[str, Any]] = []
    stable_end: dict[str, Any] | None = None
    for index, turn in enumerate(request.turns):
        blocks = _turn_blocks(turn.parts)
        if not blocks:
            continue
        role = "assistant" if turn.role == "agent" else "user"
        if not messages and role == "assistant":
            messages.append({"role": "user", "content": [{"type": "text", "text": HISTORY_OPENING}]})
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
        if index < request.stable_turns:
            stable_end = blocks[-1]
    if stable_end is not None:
        stable_end["cache_control"] = dict(EPHEMERAL)
    return messages


def _turn_blocks(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    """One turn's blocks: each run of text parts as one text block, each media part as its own."""
    blocks: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in parts:
        if not part.is_media:
            if part.text.strip():
                texts.append(part.text)
            continue
        if texts:
            blocks.append({"type": "text", "text": "\n".join(texts)})
            texts = []
        blocks.append(content_block(part))
    if texts:
        blocks.append({"type": "text", "text": "\n".join(texts)})
    return blocks


class AnthropicProvider:
    name = "anthropic"
    key_variable = KEY_VARIABLE

    def __init__(self, *, api_key: str, base_url: str = "", timeout: float = 120.0, max_tokens: int = 8192):
        if not api_key:
            raise LLMConfigError(
                f"{KEY_VARIABLE} is not set: Claude models need an Anthropic API key. Set {KEY_VARIABLE} "
                "in the environment or .env (get one at https://console.anthropic.com/settings/keys), "
                "or name the model through OpenRouter (anthropic/claude-sonnet-4.5)"
            )
        self._client = _client(api_key, base_url, timeout)
        self._max_tokens = max_tokens

    def supports_media(self, mime: str) -> bool:
        return mime in IMAGE_TYPES or mime in DOCUMENT_TYPES

    def generate(self, request: LLMRequest, *, model: str, timeout: float | None = None) -> LLMReply:
        if request.transcription:
            raise LLMError(
                "anthropic: Claude models do not transcribe audio; set TRANSCRIPTION_MODEL to a Gemini "
                "or OpenAI model (e.g. gpt-4o-mini-transcribe)"
            )
        if request.response_modalities is not None and request.response_modalities != ("TEXT",):
            raise LLMError(
                f"anthropic: Claude models answer in text only, not {', '.join(request.response_modalities)}; "
                "pictures are made by CINDY_IMAGE_MODEL (a Gemini image model)"
            )
        options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        system = build_system(request)
        if system:
            options["system"] = system
        if request.response_schema is not None:
            options["tools"] = [reply_tool(request.response_schema)]
            options["tool_choice"] = {"type": "tool", "name": REPLY_TOOL}
        with self._errors():
            message = self._client.messages.create(
                model=model, max_tokens=self._max_tokens, messages=build_messages(request), **options
            )
        return self._reply(message, model, wrapped=is_wrapped(request.response_schema))

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """The SDK's errors as ours: retryable (429, 408, 5xx, 529 overloaded, network), a key problem,
        no such model, or a refusal no retry fixes."""
        try:
            yield
        except (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError) as exc:
            # InternalServerError covers every 5xx, OverloadedError (529) included; APIConnectionError
            # covers APITimeoutError.
            raise ProviderRetryable(
                f"anthropic request failed: {type(exc).__name__}: {_message(exc)}",
                retry_after=retry_after_seconds(getattr(exc, "response", None)),
            ) from exc
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            raise LLMConfigError(
                f"anthropic refused the key in {KEY_VARIABLE} ({exc.status_code}): check the key"
            ) from exc
        except anthropic.NotFoundError as exc:
            raise ModelNotFound(f"anthropic answered 404, no such model: {_message(exc)}") from exc
        except anthropic.APIStatusError as exc:
            if exc.status_code == 408 or _error_type(exc) in ("overloaded_error", "api_error"):
                raise ProviderRetryable(
                    f"anthropic answered {exc.status_code}: {_message(exc)}",
                    retry_after=retry_after_seconds(exc.response),
                ) from exc
            raise LLMError(f"anthropic answered {exc.status_code}: {_message(exc)}") from exc

    def _reply(self, message: Any, model: str, *, wrapped: bool) -> LLMReply:
        reply = LLMReply(text="", usage=_usage(message.usage), provider=self.name, model=model)
        reply.finish_reason = message.stop_reason or ""
        texts: list[str] = []
        for block in message.content or []:
            if block.type == "tool_use" and block.name == REPLY_TOOL:
                value = block.input
                if wrapped and isinstance(value, dict) and WRAPPED_FIELD in value:
                    value = value[WRAPPED_FIELD]
                texts = [json.dumps(value, ensure_ascii=False)]
                break
            if block.type == "text":
                texts.append(block.text)
        reply.text = "".join(texts)
        if message.stop_reason == "refusal":
            reply.status = "blocked"
        elif not reply.text.strip():
            reply.status = "empty"
        return reply


def _usage(billed: Any) -> Usage:
    """The API counts input in three parts: `input_tokens` after the last cache breakpoint, and the
    tokens read from and written to the cache; ours are all input, of which some cached and some
    written to the cache. Output includes any thinking, which is kept apart as ours is."""
    if billed is None:
        return Usage()
    read = billed.cache_read_input_tokens or 0
    written = billed.cache_creation_input_tokens or 0
    details = getattr(billed, "output_tokens_details", None)
    thinking = (details.thinking_tokens or 0) if details is not None else 0
    return Usage(
        input_tokens=(billed.input_tokens or 0) + read + written,
        output_tokens=max(0, (billed.output_tokens or 0) - thinking),
        cached_tokens=read,
        cache_write_tokens=written,
        thinking_tokens=thinking,
    )


def _error_type(exc: anthropic.APIStatusError) -> str:
    """The `error.type` of the API's error body (`rate_limit_error`, `overloaded_error`...)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(error.get("type") or "")


def _message(exc: anthropic.APIError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(error.get("message") or exc.message)[:500]
