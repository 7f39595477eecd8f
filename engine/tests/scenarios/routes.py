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

The self-hosted endpoint's keys (the stage serves `ollama` on its own path of the stand-in,
stage.ENDPOINT_PATH; a persona's `llm = "ollama:llama3.1"` routes there):

    refuse_response_format = 400
                             # optional: from before the message, the stand-in refuses the next chat
                             #   completion carrying a `response_format` with HTTP 400 (or 422) and a
                             #   message naming it, as a server without structured output does; it must
                             #   be requested by the end of the scenario
    formats = ["response_format", "prompt"]
                             # each request the turn made to the endpoint, in order: whether it carried
                             #   the reply schema as `response_format` or left the format to the prompt
    markdown = true          # the endpoint answers a request without `response_format` in the original's
                             #   Markdown task blocks (`# «send»`; send and think only), which the
                             #   legacy parser reads; with it, as `{"tasks": [...]}` (a constrained server)
    note = "ollama refused response_format (400"
                             # text the note of the turn's answering LLM call holds (its `error`, while
                             #   its status is ok); "" (the default when omitted: unchecked)

A failing request is answered before the chat's script, so it takes none of the turn's replies: the
turn's `reply` is what the route that answers receives. A refused `response_format` is answered before
the model's outage and the script alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ROUTE_KEYS = (
    "fail",
    "cooled",
    "tried",
    "answered_by",
    "breakers",
    "refuse_response_format",
    "formats",
    "markdown",
    "note",
)
BREAKER_STATES = ("closed", "open", "probing")
#: How a request to an endpoint asked for the reply's format (`formats`).
FORMATS = ("response_format", "prompt")
#: The kinds an endpoint's `markdown` reply may hold: the blocks `markdown_reply` writes.
MARKDOWN_KINDS = ("send", "think")
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
    refuse_response_format: int = 0  # the status the endpoint refuses the next `response_format` with
    formats: tuple[str, ...] | None = None  # per endpoint request: "response_format" or "prompt"
    markdown: bool = False  # the endpoint answers without `response_format` in Markdown task blocks
    note: str = ""  # text the answering call's note holds


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
    refuse = value.get("refuse_response_format", 0)
    if "refuse_response_format" in value and (isinstance(refuse, bool) or refuse not in (400, 422)):
        raise RoutesError(
            f"{at}: routes refuse_response_format is {refuse!r}: the status a server without structured "
            "output refuses it with, 400 or 422, e.g. refuse_response_format = 400"
        )
    formats = value.get("formats")
    if formats is not None and (not isinstance(formats, list) or not all(f in FORMATS for f in formats)):
        raise RoutesError(
            f"{at}: routes formats is {formats!r}: list the endpoint's requests in order, each "
            f'{" or ".join(FORMATS)}, e.g. formats = ["response_format", "prompt"]'
        )
    markdown = value.get("markdown", False)
    if not isinstance(markdown, bool):
        raise RoutesError(f"{at}: routes markdown is {markdown!r}: true or false, e.g. markdown = true")
    note = value.get("note", "")
    if not isinstance(note, str) or ("note" in value and not note.strip()):
        raise RoutesError(
            f"{at}: routes note is {note!r}: text the answering call's note holds, e.g. "
            'note = "ollama refused response_format (400"'
        )
    return RouteChecks(
        fail=_outage(at, value.get("fail")),
        cooled=cooled,
        tried=None if tried is None else tuple(tried),
        answered_by=answered_by,
        breakers=tuple(breakers.items()),
        refuse_response_format=refuse,
        formats=None if formats is None else tuple(formats),
        markdown=markdown,
        note=note,
    )


def markdown_reply(tasks: list[dict[str, Any]]) -> str:
    """A scripted reply as the original's Markdown task blocks (`# «send»` and its text), as a model
    that follows a prompt teaching them writes it."""
    blocks = []
    for task in tasks:
        if task.get("kind") not in MARKDOWN_KINDS or set(task) - {"kind", "text"}:
            raise RoutesError(
                f"a markdown reply holds {task!r}: only {' and '.join(MARKDOWN_KINDS)} tasks with a text"
            )
        blocks.append(f"# «{task['kind']}»\n{task['text']}")
    return "\n\n".join(blocks)


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
