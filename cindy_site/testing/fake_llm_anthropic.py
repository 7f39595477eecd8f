"""The fake LLM server's Anthropic Messages API: `POST /v1/messages`, its replies, errors and prompt cache.

- A reply is a `message`: a text block, or, when the request forces a tool (`tool_choice` of type
  `tool`) and the scripted text is JSON, a `tool_use` block of that tool whose input is the JSON (a
  JSON value that is not an object goes under the tool schema's one required property, as a model
  fills a wrapper). A scripted text that is not JSON stays a text block, as a model that ignored the
  tool would answer. `blocked=True` answers with no content and stop reason `refusal`.
- The prompt cache: each request's prefix (tools, system, messages, in that order, after the model)
  up to each block marked `cache_control` is kept by hash. A later request that starts with a kept
  prefix reads it (`cache_read_input_tokens`: the longest one), and what lies between it and its
  own last breakpoint is written (`cache_creation_input_tokens`). Sizes are a token per 4 characters
  of each block's JSON. Unlike Anthropic it has no minimum size, no 20-block look-back and no TTL
  (`expire_caches()` empties it).
- Usage: `input_tokens` is the scripted input (the part after the last breakpoint, as Anthropic
  counts it); the cache figures are the scripted `cached_tokens` / `cache_write_tokens` plus the
  stand-in cache's.
- Errors come in Anthropic's shape, `{"type": "error", "error": {"type": ..., "message": ...}}`, with
  the API's error type for the status (529: `overloaded_error`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def is_anthropic_path(path: str) -> bool:
    return path.endswith("/v1/messages")


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _without_breakpoint(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def _blocks(body: dict[str, Any]) -> Iterator[tuple[str, bool]]:
    """The request's prefix blocks in cache order, as (canonical JSON, carries a breakpoint)."""
    for tool in body.get("tools") or []:
        yield json.dumps(_without_breakpoint(tool), sort_keys=True), "cache_control" in tool
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system or []:
        yield json.dumps(_without_breakpoint(block), sort_keys=True), "cache_control" in block
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for index, block in enumerate(content or []):
            # The role is part of the prefix: the same text from the other side is another prompt.
            key = {"role": message.get("role"), "start": index == 0, "block": _without_breakpoint(block)}
            yield json.dumps(key, sort_keys=True), isinstance(block, dict) and "cache_control" in block


class PromptCache:
    """Anthropic's prompt cache, as the module's docstring describes it."""

    def __init__(self) -> None:
        self._entries: set[str] = set()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def use(self, body: dict[str, Any]) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) for one request, keeping its prefixes."""
        digest = hashlib.sha256(str(body.get("model", "")).encode())
        tokens = 0
        positions: list[tuple[str, int, bool]] = []
        for canonical, marked in _blocks(body):
            digest.update(b"\0" + canonical.encode())
            tokens += len(canonical) // 4
            positions.append((digest.hexdigest(), tokens, marked))
        with self._lock:
            read = max((size for key, size, _ in positions if key in self._entries), default=0)
            marked_end = max((size for _, size, marked in positions if marked), default=0)
            self._entries.update(key for key, _, marked in positions if marked)
        return read, max(0, marked_end - read)


def _tool_input(body: dict[str, Any], name: str, value: Any) -> Any:
    """The forced tool's input for a reply's JSON value."""
    if isinstance(value, dict):
        return value
    tool = next((t for t in body.get("tools") or [] if t.get("name") == name), {})
    required = (tool.get("input_schema") or {}).get("required") or []
    return {required[0]: value} if len(required) == 1 else {"value": value}


def anthropic_response(
    reply: Any, *, body: dict[str, Any], model: str, cache: PromptCache, response_id: str
) -> dict[str, Any]:
    """A Messages API `message` for a scripted reply (`fake_llm_wire.FakeReply`)."""
    read, written = cache.use(body)
    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens + reply.thinking_tokens,
        "cache_read_input_tokens": reply.cached_tokens + read,
        "cache_creation_input_tokens": reply.cache_write_tokens + written,
    }
    if reply.thinking_tokens:
        usage["output_tokens_details"] = {"thinking_tokens": reply.thinking_tokens}
    content: list[dict[str, Any]] = []
    stop = "end_turn"
    choice = body.get("tool_choice") or {}
    if reply.blocked:
        stop = "refusal"
    elif reply.text is not None:
        value: Any = None
        if choice.get("type") == "tool":
            try:
                value = json.loads(reply.text)
            except ValueError:
                value = None
        if value is not None:
            name = choice["name"]
            content.append(
                {
                    "type": "tool_use",
                    "id": "toolu_" + response_id,
                    "name": name,
                    "input": _tool_input(body, name, value),
                }
            )
            stop = "tool_use"
        else:
            content.append({"type": "text", "text": reply.text})
    return {
        "id": "msg_" + response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.finish_reason or stop,
        "stop_sequence": None,
        "usage": usage,
    }
