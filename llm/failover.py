"""One request over a chain of routes: the agent's LLM first, then its fallback routes in order.

`llm.calls.call_llm` makes the attempts on one route (with its retries and its LLMCall row); this
module moves the same request to the next route when the failure is one another route can fix, and
leaves every other outcome as `call_llm` gave it:

- fails over: the provider stayed away (connection errors, timeouts, 429, 5xx, "overloaded": the
  LLMTransientError `call_llm` raises when its attempts ran out) or has no such model (ModelNotFound);
- does not fail over: a refusal or a reply that fails validation (they come back as a reply whose
  status is not "ok", or as LLMPermanentError), a missing key (LLMConfigError), and the turn's
  deadline (LLMDeadlineError: there is no time left for another route either).

A route with a next route gets one attempt (no retries, no backoff): the next route answers at once.
The last route keeps the caller's retries. Each provider class translates the same LLMRequest into
its own wire format, so the prompt is the same on every route.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from llm.calls import call_llm
from llm.errors import LLMDeadlineError, LLMError, LLMTransientError, ModelNotFound
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
    for index, route in enumerate(routes):
        last = index == len(routes) - 1
        try:
            reply = call_llm(request, route=route, max_retries=max_retries if last else 0, **call_options)
        except LLMDeadlineError:
            raise
        except FAILOVER_ERRORS as exc:
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
        return ChainReply(reply=reply, route=route, failed=failed)
    raise AssertionError("unreachable: the last route returns or raises")


def _chain_error(last: LLMError, failed: list[tuple[Route, str]], *, all_missing: bool) -> LLMError:
    """The last route's error alone; after several routes, one naming each route's error: permanent
    when no route has the model, transient (the engine waits) when any route was only away."""
    if len(failed) == 1:
        return last
    detail = "; ".join(f"{route_name(route)}: {error}" for route, error in failed)
    message = f"every route of the LLM fallback chain failed: {detail}"
    return ModelNotFound(message) if all_missing else LLMTransientError(message)
