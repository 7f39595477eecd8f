"""One request over a chain of routes: the agent's LLM first, then its fallback routes in order.

`llm.calls.call_llm` makes the attempts on one route (with its retries and its LLMCall row); this
module moves the same request to the next route when the failure is one another route can fix, and
leaves every other outcome as `call_llm` gave it:

- fails over: the provider stayed away (connection errors, timeouts, 429, 5xx, "overloaded": the
  LLMTransientError `call_llm` raises when its attempts ran out) or has no such model (ModelNotFound);
- does not fail over: a refusal or a reply that fails validation (they come back as a reply whose
  status is not "ok", or as LLMPermanentError), a missing key (LLMConfigError), and the turn's
  deadline (LLMDeadlineError: there is no time left for another route either).
- a fallback that cannot be used (LLMConfigError on a route reached because an earlier one was away:
  its key is missing or refused) is passed over with a warning: it must not turn a provider's absence
  into a failed turn. When no route is left the turn waits (LLMTransientError), as without a chain.

Each route has a circuit breaker (llm/breakers.py): a route whose breaker is open is skipped, every
failure above counts towards opening it, and a success closes it.

A route with a next route gets one attempt (no retries, no backoff): the next route answers at once.
The last route keeps the caller's retries. Each provider class translates the same LLMRequest into
its own wire format, so the prompt is the same on every route.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from cindy_site.clock import now
from llm.breakers import breaker_admits, breaker_failure, breaker_success, breakers_of
from llm.calls import call_llm
from llm.errors import LLMConfigError, LLMDeadlineError, LLMError, LLMTransientError, ModelNotFound
from llm.models import RouteBreaker
from llm.request import LLMReply, LLMRequest
from llm.routing import Route

logger = logging.getLogger(__name__)

#: The failures another route can fix.
FAILOVER_ERRORS = (LLMTransientError, ModelNotFound)


@dataclass
class ChainReply:
    """A reply and the route that gave it; `failed` lists the routes tried before it, with their errors."""

    reply: LLMReply
    route: Route
    failed: list[tuple[Route, str]]

    @property
    def answered_by(self) -> str:
        """The activity line's words for the route that answered: `openai/gpt-5-mini`, followed by
        the routes that failed first when it was a fallback."""
        name = route_name(self.route)
        if not self.failed:
            return name
        return f"{name} (fallback after {', '.join(route_name(r) for r, _ in self.failed)} failed)"


def route_name(route: Route) -> str:
    return f"{route.provider}/{route.model}"


def call_llm_chain(
    request: LLMRequest, *, routes: list[Route], max_retries: int | None = None, **call_options
) -> ChainReply:
    """Send `request` on the first route of `routes`, then each next one while the failure is one of
    FAILOVER_ERRORS. `call_options` are `call_llm`'s (purpose, ids, sleep, deadline...).

    Raises what the last route tried raised; when the chain ran out after a transient failure, the
    error is an LLMTransientError (the engine waits for the providers) naming every route's error.
    """
    if not routes:
        raise ValueError("call_llm_chain needs at least one route")
    failed: list[tuple[Route, str]] = []
    all_missing = True  # every route so far said it has no such model: the chain can only fail for good
    breakers = breakers_of(routes)
    skipped: list[RouteBreaker] = []
    for index, route in enumerate(routes):
        last = index == len(routes) - 1
        breaker = breakers.get(route)
        if not breaker_admits(route, breaker):
            skipped.append(breaker)
            failed.append((route, _skip_reason(breaker)))
            if last:
                raise _all_open_error(failed, skipped)
            continue
        try:
            reply = call_llm(request, route=route, max_retries=max_retries if last else 0, **call_options)
        except LLMDeadlineError:
            raise
        except LLMConfigError as exc:
            if not failed:
                raise  # the turn's own route: the operator fixes it; the node fails with the reason
            logger.warning("%s cannot stand in for the routes that failed: %s", route_name(route), exc)
            failed.append((route, str(exc)))
            all_missing = False
            if last:
                raise _chain_error(LLMTransientError(str(exc)), failed, all_missing=False) from exc
            continue
        except FAILOVER_ERRORS as exc:
            breaker_failure(route, error=str(exc), retry_after=getattr(exc, "retry_after", None))
            failed.append((route, str(exc)))
            all_missing = all_missing and isinstance(exc, ModelNotFound)
            if last:
                raise _chain_error(exc, failed, all_missing=all_missing) from exc
            logger.warning(
                "%s failed (%s); the same request goes to %s",
                route_name(route),
                exc,
                route_name(routes[index + 1]),
            )
            continue
        breaker_success(route, breaker)
        return ChainReply(reply=reply, route=route, failed=failed)
    raise AssertionError("unreachable: the last route returns or raises")


def _skip_reason(breaker: RouteBreaker) -> str:
    if breaker.state == RouteBreaker.State.PROBING:
        return "skipped: its breaker is open and another turn is probing it"
    return f"skipped: its breaker is open until {breaker.open_until:%Y-%m-%d %H:%M:%S} UTC"


def _all_open_error(failed: list[tuple[Route, str]], skipped: list[RouteBreaker]) -> LLMTransientError:
    """The chain ended on a route whose breaker is open: the turn waits (the engine's wait for the
    provider), at least until the first breaker allows a probe."""
    detail = "; ".join(f"{route_name(route)}: {error}" for route, error in failed)
    at = now()
    soonest = min((b.open_until for b in skipped if b.open_until is not None), default=at)
    return LLMTransientError(
        f"no route of the LLM fallback chain could be used: {detail}",
        retry_after=max(0.0, (soonest - at).total_seconds()),
    )


def _chain_error(last: LLMError, failed: list[tuple[Route, str]], *, all_missing: bool) -> LLMError:
    """The last route's error alone; after several routes, one naming each route's error: permanent
    when no route has the model, transient (the engine waits) when any route was only away."""
    if len(failed) == 1:
        return last
    detail = "; ".join(f"{route_name(route)}: {error}" for route, error in failed)
    message = f"every route of the LLM fallback chain failed: {detail}"
    return ModelNotFound(message) if all_missing else LLMTransientError(message)
