"""The errors the LLM layer raises to its callers.

The engine treats `LLMConfigError` and `LLMPermanentError` as final (the node fails at once, with
this message shown on it, and no further call is paid for) and `LLMTransientError` as the provider
being away (the turn waits for it). `llm.calls.classify_sdk_error` sorts any other exception an SDK
raises into one of those.
"""

from __future__ import annotations


class LLMError(Exception):
    """Base class for errors of the LLM layer."""


class LLMConfigError(LLMError):
    """Configuration that no retry can fix: a missing API key, an unknown model name."""


class LLMTransientError(LLMError):
    """The provider kept failing (429, 5xx, timeouts) after the bounded retries; try again later.

    `retry_after`: the seconds the provider's last answer asked to wait (its Retry-After), if any."""

    def __init__(self, message: str = "", *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ProviderRetryable(LLMError):
    """Raised by a provider for one failed attempt that is worth retrying (429, 5xx, timeout), with
    the provider's Retry-After in seconds when it sent one."""

    def __init__(self, message: str = "", *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMDeadlineError(LLMTransientError):
    """The turn ran out of time before the worker's timeout (CINDY_Q_TIMEOUT) would kill it.

    Transient: the engine retries the node, and pages already retrieved are kept in the graph.
    """


class LLMPermanentError(LLMError):
    """A call that asking again would not fix: the provider refused the request (4xx other than 408
    and 429), or its reply could not be read (not JSON, nested too deeply, not the documented shape)."""


class ModelNotFound(LLMPermanentError):
    """The provider has no such model (404: retired, renamed or misspelt). Asking this route again does
    not help, but another route of the agent's fallback chain can answer (`llm/failover.py`)."""


class CacheGone(LLMError):
    """The explicit cache a request named no longer exists on the provider (expired or deleted): the
    request is sent again without it (llm/explicit_cache.py)."""
