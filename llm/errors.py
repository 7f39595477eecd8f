"""The errors the LLM layer raises to its callers.

The engine treats `LLMConfigError` as final (the node fails at once, with this message shown on it) and
every other exception as transient (the node is retried).
"""

from __future__ import annotations


class LLMError(Exception):
    """Base class for errors of the LLM layer."""


class LLMConfigError(LLMError):
    """Configuration that no retry can fix: a missing API key, an unknown model name."""


class LLMTransientError(LLMError):
    """The provider kept failing (429, 5xx, timeouts) after the bounded retries; try again later."""


class ProviderRetryable(LLMError):
    """Raised by a provider for one failed attempt that is worth retrying (429, 5xx, timeout)."""


class LLMDeadlineError(LLMTransientError):
    """The turn ran out of time before the worker's timeout (CINDY_Q_TIMEOUT) would kill it.

    Transient: the engine retries the node, and pages already retrieved are kept in the graph.
    """
