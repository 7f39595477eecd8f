"""Circuit breakers per LLM route, shared by every process through `RouteBreaker` rows.

A route that keeps failing is skipped by every worker's turns for a cool-down instead of costing each
turn a failed request first; then exactly one turn probes it. The states:

- closed (or no row): turns use the route. Each failed call adds one to `failures`; a success sets it
  back to 0. At CINDY_LLM_BREAKER_FAILURES the breaker opens.
- open: turns skip the route until `open_until`: CINDY_LLM_BREAKER_COOLDOWN_SECONDS from the last
  failure, or the provider's Retry-After when that is longer.
- probing: the first turn after `open_until` claims the probe with a compare-and-set update (one
  process wins); the others keep skipping. The probe's success closes the breaker; its failure opens
  it again. A probe not finished by `probe_until` (its worker died) can be claimed by another turn.

Reads cost one query per turn for all its routes; a write happens only when a state or count changes.
Times come from the injected clock (`cindy_site.clock`).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction

from cindy_site.clock import now
from llm.models import RouteBreaker
from llm.routing import Route
from llm.selectors import route_breakers

logger = logging.getLogger(__name__)

State = RouteBreaker.State


def breakers_of(routes: list[Route]) -> dict[Route, RouteBreaker]:
    """The breaker rows of `routes` (a route without one is closed), in one query."""
    found = route_breakers(routes=[(route.provider, route.model) for route in routes])  # plain SQL
    return {Route(b.provider, b.model): b for b in found}


def breaker_admits(route: Route, breaker: RouteBreaker | None, *, at: dt.datetime | None = None) -> bool:
    """Whether this turn may use `route`: closed, or open past its cool-down and this turn won the
    probe. `breaker` is the row `breakers_of` read (None: closed)."""
    if breaker is None or breaker.state == State.CLOSED:
        return True
    at = at or now()
    if breaker.state == State.OPEN and breaker.open_until is not None and breaker.open_until > at:
        return False
    if breaker.state == State.PROBING and breaker.probe_until is not None and breaker.probe_until > at:
        return False
    # The cool-down is over (or the last probe was lost): claim the probe, one process only.
    claimed = RouteBreaker.objects.filter(
        pk=breaker.pk, state=breaker.state, open_until=breaker.open_until, probe_until=breaker.probe_until
    ).update(
        state=State.PROBING,
        probe_until=at + dt.timedelta(seconds=_probe_seconds()),
        changed=at,
    )
    if claimed:
        logger.info(
            "%s/%s: the breaker's cool-down is over; this turn probes it", route.provider, route.model
        )
    return claimed == 1


def breaker_success(route: Route, breaker: RouteBreaker | None) -> None:
    """A call on `route` succeeded: the breaker closes and its count starts again."""
    if breaker is None or (breaker.state == State.CLOSED and breaker.failures == 0):
        return  # nothing to change: no write on the common path
    RouteBreaker.objects.filter(pk=breaker.pk).update(
        state=State.CLOSED, failures=0, open_until=None, probe_until=None, changed=now()
    )
    if breaker.state != State.CLOSED:
        logger.info("%s/%s answered again: its breaker is closed", route.provider, route.model)


def breaker_failure(route: Route, *, error: str, retry_after: float | None = None) -> RouteBreaker:
    """A call on `route` failed in a way another route could fix: count it; open the breaker at the
    threshold, or at once when it was the probe."""
    at = now()
    for _ in range(2):  # a concurrent first insert of the same route: read it on the second pass
        try:
            with transaction.atomic():
                breaker, _created = RouteBreaker.objects.select_for_update().get_or_create(
                    provider=route.provider, model=route.model, defaults={"changed": at}
                )
                breaker.failures += 1
                breaker.last_error = error[:2000]
                if breaker.state == State.PROBING or breaker.failures >= settings.CINDY_LLM_BREAKER_FAILURES:
                    wait = max(float(settings.CINDY_LLM_BREAKER_COOLDOWN_SECONDS), retry_after or 0.0)
                    if breaker.state != State.OPEN:
                        breaker.changed = at
                        logger.warning(
                            "%s/%s failed %d times in a row: its breaker opens for %.0f s (%s)",
                            route.provider,
                            route.model,
                            breaker.failures,
                            wait,
                            error,
                        )
                    breaker.state = State.OPEN
                    breaker.open_until = at + dt.timedelta(seconds=wait)
                    breaker.probe_until = None
                breaker.save()
                return breaker
        except IntegrityError:
            continue
    raise RuntimeError(f"could not record the failure of {route.provider}/{route.model}")


def _probe_seconds() -> float:
    """How long a probe may take before another turn may claim it: one call with its retries."""
    return float(settings.LLM_TIMEOUT_SECONDS) * (settings.LLM_MAX_RETRIES + 1)
