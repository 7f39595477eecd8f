"""The provider interface: a provider-neutral request in, a reply with its usage out."""

from __future__ import annotations

from typing import Protocol

from llm.request import LLMReply, LLMRequest


class Provider(Protocol):
    name: str

    def generate(self, request: LLMRequest, *, model: str, timeout: float | None = None) -> LLMReply:
        """One attempt. Raises ProviderRetryable for 429/5xx/timeouts, LLMConfigError for bad keys.

        `timeout` (seconds) shortens this attempt's timeout below the client's LLM_TIMEOUT_SECONDS.
        """
        ...

    def supports_media(self, mime: str) -> bool:
        """Whether media of this MIME type can be sent as input (for media descriptions)."""
        ...


def transport_errors() -> tuple[type[BaseException], ...]:
    """Network-level errors of the HTTP libraries under the SDKs (timeouts, resets, refused)."""
    found: list[type[BaseException]] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        error = getattr(module, "TransportError", None)
        if isinstance(error, type):
            found.append(error)
    return tuple(found)
