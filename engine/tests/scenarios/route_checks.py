"""Playing a turn's `[turn.routes]` table (routes.py) on the stage: the outage, the endpoint's refusal
of `response_format` and the cool-down before the turn's message, the checks after it, and the
outages' and refusals' leftovers at the scenario's end."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cindy_site.testing.fake_llm import FakeLLMServer
from engine.tests.scenarios.routes import ANSWERED
from engine.tests.scenarios.spec import Scenario, Turn
from engine.tests.scenarios.stage import Stage, wait


@dataclass(frozen=True)
class Mark:
    """Where the turn started: the newest LLM call and activity event before it."""

    call_id: int
    event_id: int
    requests: int  # how many requests the stand-in had recorded


def prepare(stage: Stage, scenario: Scenario, turn: Turn) -> Mark:
    """Before the turn's message: start its outage, wait out the cool-down it names, and mark where
    the turn starts."""
    checks = turn.routes
    if checks is not None and checks.fail is not None:
        stage.llm.fail_model(checks.fail.model, checks.fail.status, checks.fail.times)
    if checks is not None and checks.refuse_response_format:
        stage.llm.refuse_response_format(checks.refuse_response_format, times=1)
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
    return Mark(call_id=calls, event_id=events, requests=len(stage.llm.requests))


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
        said = [m.group("route") for (summary,) in rows if (m := ANSWERED.match(summary))]
        if said != [checks.answered_by]:
            problems.append(
                f"{at}: the activity says the turn was answered by {said}, expected {[checks.answered_by]}"
            )
    if checks.formats is not None:
        formats = [
            "response_format" if isinstance(r.json, dict) and "response_format" in r.json else "prompt"
            for r in stage.endpoint_requests(mark.requests)
        ]
        if formats != list(checks.formats):
            problems.append(
                f"{at}: the endpoint's requests asked for the format by {formats}, expected {list(checks.formats)}"
            )
    if checks.note:
        rows = stage.db.query(
            "SELECT error FROM llm_llmcall WHERE purpose = 'plan' AND "
            f"id > {mark.call_id} AND conversation_id IN ({ids}) AND status = 'ok' ORDER BY id"
        )
        notes = [error for (error,) in rows]
        if len(rows) != 1 or checks.note not in notes[0]:
            problems.append(
                f"{at}: the answering LLM calls' notes are {notes}, expected one holding {checks.note!r}"
            )
    for route, expected in checks.breakers:
        state, _open_until = breaker(stage, route)
        if state != expected:
            problems.append(f"{at}: the breaker of {route} is {state}, expected {expected}")
    return problems


def leftover(llm: FakeLLMServer, scenario: Scenario) -> list[str]:
    """At the end of the scenario: outages on the stand-in `llm` whose failures were not all requested,
    and a refusal of `response_format` no request met (ended here, so they do not reach the next
    scenario)."""
    models = {t.routes.fail.model for t in scenario.turns if t.routes is not None and t.routes.fail}
    problems = []
    if any(t.routes is not None and t.routes.refuse_response_format for t in scenario.turns):
        left = llm.response_format_refusals_left()
        llm.refuse_response_format(None)
        if left:
            problems.append(
                f"{left} refusal(s) of response_format were never requested: no request to the endpoint carried it"
            )
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
