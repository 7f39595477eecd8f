"""One LLM call with bounded retries, recorded as an LLMCall row and an activity event."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from django.conf import settings

from llm.errors import LLMConfigError, LLMError, LLMTransientError, ProviderRetryable
from llm.providers import provider_for
from llm.request import LLMReply, LLMRequest, Usage
from llm.routing import Route
from llm.usage import llm_call_record

logger = logging.getLogger(__name__)

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0


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
) -> LLMReply:
    """Send `request` on `route`.

    1. Build the provider (LLMConfigError when its API key is missing).
    2. Try up to 1 + LLM_MAX_RETRIES times; 429, 5xx and timeouts wait backoff_delay() in between.
    3. Record one LLMCall row for the outcome (ok, blocked, empty or error).
    4. Raise LLMTransientError when the retries ran out; return the reply otherwise.
    """
    provider = provider_for(route.provider)
    retries = settings.LLM_MAX_RETRIES if max_retries is None else max_retries
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
    for attempt in range(retries + 1):
        try:
            reply = provider.generate(request, model=route.model)
        except ProviderRetryable as exc:
            last_error = str(exc)
            if attempt < retries:
                delay = backoff_delay(attempt)
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


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
