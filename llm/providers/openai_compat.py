"""OpenAI-compatible chat completions (Grok, OpenAI, OpenRouter, Ollama, vLLM) through the openai SDK."""

from __future__ import annotations

import base64
import threading
from typing import Any

import openai

from llm.errors import LLMConfigError, LLMError, ProviderRetryable
from llm.request import LLMReply, LLMRequest, Turn, Usage

_clients: dict[tuple[str, str, float], openai.OpenAI] = {}
_clients_lock = threading.Lock()
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def _client(api_key: str, base_url: str, timeout: float) -> openai.OpenAI:
    key = (api_key, base_url, timeout)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            # max_retries=0: retries are ours (llm.calls), with backoff the tests can observe.
            client = openai.OpenAI(api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0)
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


class OpenAICompatibleProvider:
    """One class for every OpenAI-compatible endpoint; `name` says which (grok, openai, openrouter)."""

    def __init__(self, *, name: str, key_variable: str, api_key: str, base_url: str, timeout: float = 120.0):
        self.name = name
        self.key_variable = key_variable
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
        messages = build_messages(request)
        try:
            # The SDK walks every message against its typed schema (about 0.2 ms each); it sees only
            # the last one, and the documented `extra_body` puts the whole list, already in wire
            # format, into the body in its place.
            response = self._client.chat.completions.create(
                model=model, messages=messages[-1:], extra_body={"messages": messages}, **extra
            )
        except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as exc:
            # APIConnectionError covers APITimeoutError.
            raise ProviderRetryable(f"{self.name} request failed: {type(exc).__name__}: {exc}") from exc
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise LLMConfigError(
                f"{self.name} refused the key in {self.key_variable} ({exc.status_code}): check the key"
            ) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 408:
                raise ProviderRetryable(f"{self.name} answered {exc.status_code}") from exc
            raise LLMError(f"{self.name} answered {exc.status_code}: {exc.message}") from exc
        return self._reply(response, model)

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
