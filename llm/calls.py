"""One LLM call with bounded retries, recorded as an LLMCall row and an activity event."""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections.abc import Callable

from django.conf import settings

from cindy_site.clock import get_clock
from conversations.models import TaskNode
from llm.errors import (
    CacheGone,
    LLMConfigError,
    LLMDeadlineError,
    LLMError,
    LLMPermanentError,
    LLMTransientError,
    ProviderRetryable,
)
from llm.explicit_cache import cache_for_request, cache_forget
from llm.models import LLMCall
from llm.providers import provider_for
from llm.request import LLMReply, LLMRequest, Usage
from llm.routing import Route
from llm.selectors import finished_call
from llm.usage import estimate_input_tokens, llm_call_finish, llm_call_start

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
    node_attempts: int | None = None,
) -> LLMReply:
    """Send `request` on `route`. `node_attempts`: the node's attempt count, when the caller has read
    the node (planning has), for the plan's fingerprint.

    1. Build the provider (LLMConfigError when its API key is missing).
    2. A Gemini planning request of a busy conversation that misses the implicit cache uses an
       explicit cache of its stable prefix (llm/explicit_cache.py); when the provider no longer
       has that cache, the attempt is sent again at once without it.
    3. Try up to 1 + LLM_MAX_RETRIES times; 429, 5xx and timeouts wait backoff_delay() in between.
       Any other exception the SDK raises is classified (`classify_sdk_error`): network errors are
       retried the same way; anything else (a reply that is not JSON, nested too deeply to parse,
       or not the documented shape; a 4xx) ends the call at once as LLMPermanentError: one paid
       call, never more.
       With a `deadline` (the injected clock's monotonic time the caller must be done by), no attempt
       starts with less than MIN_ATTEMPT_SECONDS left (counting the backoff before it), and each
       attempt's timeout is cut to the time left.
    4. Record one LLMCall row: written as pending (costed at the request's estimated input) before
       the first attempt, so a worker killed mid-request still leaves its cost; then finished with the
       outcome (ok, blocked, empty or error) and the real usage. Every row ends in a final state,
       whatever was raised.
    5. Raise LLMTransientError when the retries ran out, LLMDeadlineError (a LLMTransientError) when
       the time did; return the reply otherwise.
    """
    fingerprint = (
        plan_fingerprint(request, route=route, node_id=node_id, attempts=node_attempts)
        if purpose == "plan"
        else ""
    )
    earlier = finished_reply(node_id=node_id, fingerprint=fingerprint)
    if earlier is not None:
        return earlier
    provider = provider_for(route.provider)
    cache = (
        cache_for_request(
            request, provider=provider, route=route, agent_id=agent_id, conversation_id=conversation_id
        )
        if purpose == "plan"
        else None
    )
    retries = settings.LLM_MAX_RETRIES if max_retries is None else max_retries
    clock = get_clock()
    started = time.perf_counter()
    last_error = ""
    retry_after: float | None = None
    record = llm_call_start(
        provider=route.provider,
        model=route.model,
        purpose=purpose,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        estimated_input_tokens=estimate_input_tokens(request),
        fingerprint=fingerprint,
    )
    attempts = 0
    for attempt in range(retries + 1):
        left = None if deadline is None else deadline - clock.monotonic()
        if left is not None and left < MIN_ATTEMPT_SECONDS:
            raise _out_of_time(route, attempts, left, last_error, started=started, record=record)
        attempts += 1
        try:
            timeout = None if left is None else min(settings.LLM_TIMEOUT_SECONDS, left)
            try:
                if cache is None:
                    reply = provider.generate(request, model=route.model, timeout=timeout)
                else:
                    try:
                        reply = provider.generate(request, model=route.model, timeout=timeout, cache=cache)
                    except CacheGone as exc:
                        # Expired or deleted on the provider: this request goes without it, at once.
                        logger.info("%s/%s: %s; sent without it", route.provider, route.model, exc)
                        cache_forget(cache.name)
                        cache = None
                        reply = provider.generate(request, model=route.model, timeout=timeout)
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever an SDK raises is classified here
                raise classify_sdk_error(exc, route=route) from exc
        except ProviderRetryable as exc:
            last_error, retry_after = str(exc), exc.retry_after
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
        except LLMConfigError as exc:
            _failed(record, started=started, error=str(exc))
            raise
        except LLMError as exc:
            _failed(record, started=started, error=str(exc))
            raise (
                exc if isinstance(exc, LLMTransientError | LLMPermanentError) else LLMPermanentError(str(exc))
            ) from exc
        except BaseException as exc:
            # Interrupted (the worker's timeout, a signal): the row still ends, and the error goes on.
            _failed(record, started=started, error=f"interrupted: {type(exc).__name__}: {exc}")
            raise
        llm_call_finish(
            record,
            usage=reply.usage,
            status=reply.status,
            latency_ms=_ms(started),
            reply=reply.text,
            explicit_cache=cache is not None,
            note="; ".join(reply.notes),
        )
        reply.llm_call_id = record.pk
        return reply
    message = f"{route.provider}/{route.model} failed {retries + 1} times; last error: {last_error}"
    _failed(record, started=started, error=message)
    raise LLMTransientError(message, retry_after=retry_after)


def classify_sdk_error(exc: Exception, *, route: Route) -> LLMError:
    """What an exception an SDK raised means for the call.

    Network-level failures (connection refused or reset, timeouts) are worth another attempt:
    ProviderRetryable. Everything else comes from a reply that was received and could not be used (a
    200 whose body is not JSON raises JSONDecodeError; a deeply nested body RecursionError; a body of
    the wrong shape a validation error) or from a fault no retry fixes: LLMPermanentError, naming the
    exception, so the turn fails once instead of paying for the same unreadable reply again.
    """
    where = f"{route.provider}/{route.model}"
    if isinstance(exc, ConnectionError | TimeoutError):
        return ProviderRetryable(f"{where}: request failed: {type(exc).__name__}: {exc}")
    if isinstance(exc, RecursionError):
        detail = "its reply is nested too deeply to parse"
    elif isinstance(exc, ValueError):  # json.JSONDecodeError and pydantic's ValidationError included
        detail = "its reply is not the JSON the SDK expects"
    else:
        detail = "the SDK failed on its reply"
    return LLMPermanentError(f"{where}: {detail} ({type(exc).__name__}: {str(exc)[:300]}); not asked again")


def _out_of_time(
    route: Route, attempts: int, left: float, last_error: str, *, started: float, record: LLMCall
) -> LLMDeadlineError:
    """Record the call as failed and return the error that ends the turn."""
    tried = f"after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else "before any attempt"
    message = (
        f"{route.provider}/{route.model}: stopped {tried}, {max(0.0, left):.0f} s before the turn's "
        "deadline (the worker would be killed at CINDY_Q_TIMEOUT); the node will be retried"
    ) + (f"; last error: {last_error}" if last_error else "")
    _failed(record, started=started, error=message, attempted=attempts > 0)
    return LLMDeadlineError(message)


def _failed(record: LLMCall, *, started: float, error: str, attempted: bool = True) -> None:
    """Finish a call that got no reply. Once a request was sent it keeps its estimated input cost: a
    provider may have billed an attempt that timed out or failed after reading the request."""
    usage = Usage(input_tokens=record.input_tokens if attempted else 0)
    llm_call_finish(record, usage=usage, status="error", latency_ms=_ms(started), error=error)


def plan_fingerprint(
    request: LLMRequest, *, route: Route, node_id: int | None, attempts: int | None = None
) -> str:
    """The identity of a planning request within its node's attempt: the node, its attempt count (read
    unless given), the route and everything before the final turn (which carries the current time). A
    planning task that ran again after its worker was killed asks the same; one retried after a
    failure does not."""
    if node_id is None:
        return ""
    if attempts is None:
        attempts = TaskNode.objects.filter(pk=node_id).values_list("attempts", flat=True).first()
    digest = hashlib.sha256(f"{node_id}:{attempts}:{route.provider}/{route.model}\0".encode())
    digest.update(request.system.encode("utf-8", "surrogatepass"))
    for turn in request.turns[:-1]:
        digest.update(f"\0{turn.role}".encode())
        for part in turn.parts:
            digest.update(b"\1" + part.text.encode("utf-8", "surrogatepass"))
            if part.data is not None:
                digest.update(b"\2" + hashlib.sha256(part.data).digest())
    return digest.hexdigest()


def finished_reply(*, node_id: int | None, fingerprint: str) -> LLMReply | None:
    """The reply of a finished call with this fingerprint, if its planning task was killed before it
    could act on it; None if there is none (the call must be made)."""
    if not fingerprint:
        return None
    call = finished_call(node_id=int(node_id), fingerprint=fingerprint)  # plain SQL: llm/selectors.py
    if call is None:
        return None
    logger.info(
        "node %s: reusing the reply of LLM call %s, made before its worker was stopped", node_id, call.pk
    )
    return LLMReply(text=call.reply, provider=call.provider, model=call.model, llm_call_id=call.pk)


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
