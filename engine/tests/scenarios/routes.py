"""A turn's LLM routes: an outage of one model on the stand-in, the wait for a breaker's cool-down,
and what the turn's planning did about it (docs/scenarios.md, "Fallback routes"). This module reads
the table; `route_checks.py` plays and checks it on the stage.

A turn's `[turn.routes]` sub-table (TOML: after the turn's own keys):

    [[turn]]
    say = "Are you there?"
    reply = [{kind = "send", text = "Always."}]
    [turn.routes]
    fail = {model = "gemini-2.5-flash", status = 503, times = 3}
                             # optional: from before the message, the stand-in answers the next `times`
                             #   requests for this model with HTTP `status` (default 503), whatever
                             #   chat they come from; the other models answer as scripted. Every one of
                             #   them must be requested by the end of the scenario
    cooled = "gemini/gemini-2.5-flash"
                             # optional: first wait (bounded, polling) until this route's breaker is
                             #   open and its cool-down is over, so that the turn probes it
    tried = ["gemini/gemini-2.5-flash", "openai/gpt-5-mini"]
                             # the routes the turn's planning requests went to, in order (its LLMCall
                             #   rows; a route skipped while its breaker is open has none)
    answered_by = "openai/gpt-5-mini (fallback after gemini/gemini-2.5-flash failed)"
                             # the route the turn's activity line says answered, exactly
    breakers = {"gemini/gemini-2.5-flash" = "open"}
                             # each route's breaker after the turn: "closed" (also: no row yet),
                             #   "open" or "probing"

A failing request is answered before the chat's script, so it takes none of the turn's replies: the
turn's `reply` is what the route that answers receives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ROUTE_KEYS = ("fail", "cooled", "tried", "answered_by", "breakers")
BREAKER_STATES = ("closed", "open", "probing")
_ROUTE = re.compile(r"^[a-z][a-z0-9_-]*/\S+$")
#: A planning turn's activity line and the route it names (engine/tasks.py).
ANSWERED = re.compile(r"^received #\d+: planned .* \(answered by (?P<route>.+)\)$", re.DOTALL)
EXAMPLE = (
    '[turn.routes] with fail = {model = "gemini-2.5-flash", status = 503, times = 2}, '
    'tried = ["gemini/gemini-2.5-flash", "openai/gpt-5-mini"], answered_by = "openai/gpt-5-mini ...", '
    'breakers = {"gemini/gemini-2.5-flash" = "open"}, cooled = "gemini/gemini-2.5-flash"'
)


class RoutesError(ValueError):
    """A `[turn.routes]` table that cannot be checked; spec.py reports it as a ScenarioError."""


@dataclass(frozen=True)
class Outage:
    model: str
    status: int
    times: int


@dataclass(frozen=True)
class RouteChecks:
    fail: Outage | None = None
    cooled: str = ""  # a route ("provider/model") whose cool-down the turn waits out first
    tried: tuple[str, ...] | None = None
    answered_by: str = ""
    breakers: tuple[tuple[str, str], ...] = ()  # (route, state) after the turn


def parse_routes(at: str, value: Any) -> RouteChecks | None:
    """A turn's `routes` table, checked; None without one. Raises RoutesError naming the key and the fix."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value or set(value) - set(ROUTE_KEYS):
        raise RoutesError(f"{at}: routes is {value!r}: use the keys {', '.join(ROUTE_KEYS)}; e.g. {EXAMPLE}")
    tried = value.get("tried")
    if tried is not None and (not isinstance(tried, list) or not all(_is_route(r) for r in tried)):
        raise RoutesError(
            f"{at}: routes tried is {tried!r}: list routes as provider/model, in the order they were "
            'asked, e.g. tried = ["gemini/gemini-2.5-flash", "openai/gpt-5-mini"]'
        )
    answered_by = value.get("answered_by", "")
    if not isinstance(answered_by, str) or (
        "answered_by" in value and not _is_route(answered_by.split(" ")[0])
    ):
        raise RoutesError(
            f"{at}: routes answered_by is {answered_by!r}: the activity line's words for the route that "
            'answered, e.g. answered_by = "openai/gpt-5-mini (fallback after gemini/gemini-2.5-flash failed)"'
        )
    cooled = value.get("cooled", "")
    if "cooled" in value and not _is_route(cooled):
        raise RoutesError(
            f"{at}: routes cooled is {cooled!r}: name the route whose cool-down to wait out, e.g. "
            'cooled = "gemini/gemini-2.5-flash"'
        )
    breakers = value.get("breakers", {})
    if not isinstance(breakers, dict) or not all(
        _is_route(route) and state in BREAKER_STATES for route, state in breakers.items()
    ):
        raise RoutesError(
            f"{at}: routes breakers is {breakers!r}: map provider/model to one of "
            f'{", ".join(BREAKER_STATES)}, e.g. breakers = {{"gemini/gemini-2.5-flash" = "open"}}'
        )
    return RouteChecks(
        fail=_outage(at, value.get("fail")),
        cooled=cooled,
        tried=None if tried is None else tuple(tried),
        answered_by=answered_by,
        breakers=tuple(breakers.items()),
    )


def _is_route(value: Any) -> bool:
    return isinstance(value, str) and bool(_ROUTE.match(value))


def _outage(at: str, value: Any) -> Outage | None:
    if value is None:
        return None
    example = 'e.g. fail = {model = "gemini-2.5-flash", status = 503, times = 2}'
    if not isinstance(value, dict) or set(value) - {"model", "status", "times"}:
        raise RoutesError(
            f"{at}: routes fail is {value!r}: give model, times and optionally status; {example}"
        )
    model, status, times = value.get("model"), value.get("status", 503), value.get("times")
    if not isinstance(model, str) or not model.strip() or len(model.split()) != 1:
        raise RoutesError(
            f"{at}: routes fail model is {model!r}: the model's name as requested (no provider), {example}"
        )
    if isinstance(status, bool) or not isinstance(status, int) or not (status == 429 or 500 <= status <= 599):
        raise RoutesError(
            f"{at}: routes fail status is {status!r}: a status another route can make good, 429 or "
            f"500 to 599; {example}"
        )
    if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= 20:
        raise RoutesError(f"{at}: routes fail times is {times!r}: how many requests fail, 1 to 20; {example}")
    return Outage(model=model.strip(), status=status, times=times)
