"""One LLM call with bounded retries, recorded as an LLMCall row and an activity event."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from django.conf import settings

from cindy_site.clock import get_clock
from llm.errors import LLMConfigError, LLMDeadlineError, LLMError, LLMTransientError, ProviderRetryable
from llm.providers import provider_for
from llm.request import LLMReply, LLMRequest, Usage
from llm.routing import Route
from llm.usage import llm_call_record

logger = logging.getLogger(__name__)

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
#: An attempt with less time than this before the deadline is not started: it could not finish.
MIN_ATTEMPT_SECONDS = 5.0


def backoff_delay(attempt: int, *, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter: uniform in [c/2, c] for c = min(max, base * 2**attempt)."""
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * (2**attempt))
    return (rng or random).uniform(ceiling / 2, ceiling)


def call_llm(
    request: LLMRequest,
    *,
    route: Route,
    purpose: str = "plan",
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_retries: int | None = None,
    deadline: float | None = None,
) -> LLMReply:
    """Send `request` on `route`.

    1. Build the provider (LLMConfigError when its API key is missing).
    2. Try up to 1 + LLM_MAX_RETRIES times; 429, 5xx and timeouts wait backoff_delay() in between.
       With a `deadline` (the injected clock's monotonic time the caller must be done by), no attempt
       starts with less than MIN_ATTEMPT_SECONDS left (counting the backoff before it), and each
       attempt's timeout is cut to the time left.
    3. Record one LLMCall row for the outcome (ok, blocked, empty or error).
    4. Raise LLMTransientError when the retries ran out, LLMDeadlineError (a LLMTransientError) when
       the time did; return the reply otherwise.
    """
    provider = provider_for(route.provider)
    retries = settings.LLM_MAX_RETRIES if max_retries is None else max_retries
    clock = get_clock()
    started = time.perf_counter()
    last_error = ""
    record = dict(
        provider=route.provider,
        model=route.model,
        purpose=purpose,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
    )
    attempts = 0
    for attempt in range(retries + 1):
        left = None if deadline is None else deadline - clock.monotonic()
        if left is not None and left < MIN_ATTEMPT_SECONDS:
            raise _out_of_time(route, attempts, left, last_error, started=started, record=record)
        attempts += 1
        try:
            timeout = None if left is None else min(settings.LLM_TIMEOUT_SECONDS, left)
            reply = provider.generate(request, model=route.model, timeout=timeout)
        except ProviderRetryable as exc:
            last_error = str(exc)
            if attempt < retries:
                delay = backoff_delay(attempt)
                left = None if deadline is None else deadline - clock.monotonic()
                if left is not None and left - delay < MIN_ATTEMPT_SECONDS:
                    # After this backoff no attempt could finish in time: stop now, not at the deadline.
                    raise _out_of_time(
                        route, attempts, left, last_error, started=started, record=record
                    ) from exc
                logger.info("%s/%s: %s; retrying in %.1fs", route.provider, route.model, exc, delay)
                sleep(delay)
            continue
        except (LLMConfigError, LLMError) as exc:
            llm_call_record(usage=Usage(), status="error", latency_ms=_ms(started), error=str(exc), **record)
            raise
        call = llm_call_record(usage=reply.usage, status=reply.status, latency_ms=_ms(started), **record)
        reply.llm_call_id = call.pk
        return reply
    message = f"{route.provider}/{route.model} failed {retries + 1} times; last error: {last_error}"
    llm_call_record(usage=Usage(), status="error", latency_ms=_ms(started), error=message, **record)
    raise LLMTransientError(message)


def _out_of_time(
    route: Route, attempts: int, left: float, last_error: str, *, started: float, record: dict
) -> LLMDeadlineError:
    """Record the call as failed and return the error that ends the turn."""
    tried = f"after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else "before any attempt"
    message = (
        f"{route.provider}/{route.model}: stopped {tried}, {max(0.0, left):.0f} s before the turn's "
        "deadline (the worker would be killed at CINDY_Q_TIMEOUT); the node will be retried"
    ) + (f"; last error: {last_error}" if last_error else "")
    llm_call_record(usage=Usage(), status="error", latency_ms=_ms(started), error=message, **record)
    return LLMDeadlineError(message)


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
