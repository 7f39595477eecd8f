"""A turn's LLM routes: an outage of one model on the stand-in, the wait for a breaker's cool-down,
and what the turn's planning did about it (docs/scenarios.md, "Fallback routes").

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

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cindy_site.testing.fake_llm import FakeLLMServer
    from engine.tests.scenarios.spec import Scenario, Turn
    from engine.tests.scenarios.stage import Stage

ROUTE_KEYS = ("fail", "cooled", "tried", "answered_by", "breakers")
BREAKER_STATES = ("closed", "open", "probing")
_ROUTE = re.compile(r"^[a-z][a-z0-9_-]*/\S+$")
_ANSWERED = re.compile(r"^received #\d+: planned .* \(answered by (?P<route>.+)\)$", re.DOTALL)
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


@dataclass(frozen=True)
class Mark:
    """Where the turn started: the newest LLM call and activity event before it."""

    call_id: int
    event_id: int


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


# --- on the stage -----------------------------------------------------------------------------------


def prepare(stage: Stage, scenario: Scenario, turn: Turn) -> Mark:
    """Before the turn's message: start its outage, wait out the cool-down it names, and mark where
    the turn starts."""
    from engine.tests.scenarios.stage import wait

    checks = turn.routes
    if checks is not None and checks.fail is not None:
        stage.llm.fail_model(checks.fail.model, checks.fail.status, checks.fail.times)
    if checks is not None and checks.cooled:
        state, open_until = breaker(stage, checks.cooled)
        assert state == "open" and open_until is not None, (
            f"{scenario.path.name}: turn {turn.number}: routes cooled: the breaker of {checks.cooled} is "
            f"{state}, not open: nothing to wait for (remove cooled, or open it in an earlier turn)"
        )
        wait(
            lambda: dt.datetime.now(dt.UTC) > open_until,
            f"{scenario.name} turn {turn.number}: the cool-down of {checks.cooled} to end",
            stage,
        )
    calls = stage.db.query("SELECT COALESCE(MAX(id), 0) FROM llm_llmcall")[0][0]
    events = stage.db.query("SELECT COALESCE(MAX(id), 0) FROM conversations_activityevent")[0][0]
    return Mark(call_id=calls, event_id=events)


def check(stage: Stage, scenario: Scenario, turn: Turn, mark: Mark) -> list[str]:
    """What the turn's planning did with its routes, against the turn's `routes` table."""
    checks = turn.routes
    if checks is None:
        return []
    at = f"turn {turn.number}"
    ids = ", ".join(map(str, stage.conversation_ids(scenario))) or "NULL"
    problems = []
    if checks.tried is not None:
        rows = stage.db.query(
            "SELECT provider, model FROM llm_llmcall WHERE purpose = 'plan' AND "
            f"id > {mark.call_id} AND conversation_id IN ({ids}) ORDER BY id"
        )
        tried = [f"{provider}/{model}" for provider, model in rows]
        if tried != list(checks.tried):
            problems.append(f"{at}: the planning requests went to {tried}, expected {list(checks.tried)}")
    if checks.answered_by:
        rows = stage.db.query(
            "SELECT summary FROM conversations_activityevent WHERE kind = 'node_done' AND "
            f"id > {mark.event_id} AND conversation_id IN ({ids}) ORDER BY id"
        )
        said = [m.group("route") for (summary,) in rows if (m := _ANSWERED.match(summary))]
        if said != [checks.answered_by]:
            problems.append(
                f"{at}: the activity says the turn was answered by {said}, expected {[checks.answered_by]}"
            )
    for route, expected in checks.breakers:
        state, _open_until = breaker(stage, route)
        if state != expected:
            problems.append(f"{at}: the breaker of {route} is {state}, expected {expected}")
    return problems


def leftover(llm: FakeLLMServer, scenario: Scenario) -> list[str]:
    """At the end of the scenario: outages on the stand-in `llm` whose failures were not all requested
    (ended here, so they do not reach the next scenario)."""
    models = {t.routes.fail.model for t in scenario.turns if t.routes is not None and t.routes.fail}
    problems = []
    for model in sorted(models):
        left = llm.recover_model(model)
        if left:
            problems.append(f"{left} failure(s) of {model} were never requested: fewer requests reached it")
    return problems


def breaker(stage: Stage, route: str) -> tuple[str, dt.datetime | None]:
    """(state, open_until) of a route's breaker; ("closed", None) when it has no row."""
    provider, _, model = route.partition("/")
    rows = stage.db.query(
        "SELECT state, open_until FROM llm_routebreaker WHERE "
        f"provider = '{provider}' AND model = '{model.replace(chr(39), chr(39) * 2)}'"
    )
    if not rows:
        return "closed", None
    state, open_until = rows[0]
    if isinstance(open_until, str):  # SQLite gives the stored text
        open_until = dt.datetime.fromisoformat(open_until)
    if open_until is not None and open_until.tzinfo is None:  # stored in UTC
        open_until = open_until.replace(tzinfo=dt.UTC)
    return state, open_until
