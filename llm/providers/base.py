"""The provider interface: a provider-neutral request in, a reply with its usage out."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from llm.request import LLMReply, LLMRequest


@dataclass(frozen=True)
class Embedded:
    """What an embedding call returned: one vector per text, in order, and the input tokens the
    provider counted (None: it did not say)."""

    vectors: list[list[float]]
    input_tokens: int | None


_tls_lock = threading.Lock()
_tls: ssl.SSLContext | None = None


def tls_context() -> ssl.SSLContext:
    """The process's one TLS context, shared by every SDK client it builds (each provider's `_client`).

    Left to themselves, the SDKs build a context for every client and load the CA bundle into it:
    about 45 ms of CPU each, twice for a google-genai client (its HTTP and its WebSocket transports).
    A process builds a client per endpoint and key, so a worker whose agents carry keys of their own
    paid that for each. httpx's defaults, as the SDKs use them: certifi's bundle, or SSL_CERT_FILE or
    SSL_CERT_DIR when set. A context is safe to share between threads and clients.
    """
    global _tls
    with _tls_lock:
        if _tls is None:
            import httpx

            _tls = httpx.create_ssl_context()
        return _tls


def sdk_client_options(
    http_client_class: type, *, api_key: str, base_url: str, timeout: float
) -> dict[str, Any]:
    """What the OpenAI and the Anthropic SDK clients are built with (their constructors take the same):
    no retries of the SDK's (retries are ours, `llm.calls`, with backoff the tests can observe), and
    the SDK's own HTTP client (`http_client_class`, its `DefaultHttpxClient`) on the shared TLS context."""
    return {
        "api_key": api_key,
        "base_url": base_url or None,
        "timeout": timeout,
        "max_retries": 0,
        "http_client": http_client_class(verify=tls_context()),
    }


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


def retry_after_seconds(response: Any) -> float | None:
    """The wait a provider asked for in its `Retry-After` header (seconds or an HTTP date), if any.

    The circuit breaker (llm/breakers.py) keeps the route closed to turns at least that long."""
    headers = getattr(response, "headers", None)
    value = (headers.get("retry-after") if headers is not None else None) or ""
    value = str(value).strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())
