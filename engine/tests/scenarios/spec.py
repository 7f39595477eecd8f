"""Scenario files: one TOML file per scenario, read with the standard library's tomllib.

A scenario drives one shipped persona through scripted turns. Its format (docs/engine.md,
"Scenarios"):

    persona = "Orla"                 # an agent of samples/agents/
    people = ["Ada", "Ben"]          # sandbox users; the first is who a turn speaks as by default
    operators = ["Ben"]              # optional: people who are operators (CINDY_OPERATOR_IDS)
    sticker_sets = ["BrambleGnome"]  # optional: sticker sets an operator adds to the persona first
    library = ["AgADCanalPhoto5.png"]   # optional: samples/media files uploaded to the agent's library
    logs = ["engine.x: some warning"]   # optional: WARNING/ERROR lines this scenario expects (substrings)
    telegram = true                  # optional: also run on the MTProto stand-in (Telegram kinds only)
    bots = ["Beep"]                  # optional: people who are bot accounts
    user_ids = {Tg = 777000}         # optional: people with a fixed user id (777000: Telegram's service)
    group = {title = "Club", agents = ["Wendy"]}   # optional: the people speak in this group, which
                                     # these other personas are in too (sandbox only)
    through_api = true               # optional: the people speak through the REST API (sandbox only)

    [[turn]]
    say = "Hello"                    # the person's message, or a turn started otherwise:
    # trigger = "xsend" | "event"    #   by the agent's own xsend or event (the turn waits for it), or
    # trigger = "nudge"              #   by an operator's nudge (the admin's XSend), with `intent = "..."`
    # trigger = "operator"           #   by the operator's `operator` change (a held turn plans again)
    as = "Ada"                       # optional: whose chat this turn is in
    operator = {daily_spend_cap = "0.01"}   # optional: spend limits an operator saves first, as the
                                     #   admin does ("" clears one)
    reply = [{kind = "send", text = "Hi!"}]            # what the LLM stand-in answers
    usage = {input_tokens = 6000, output_tokens = 1000}   # optional: the tokens the model reports
    braked = true                    # optional: a spend brake holds the turn: no LLM request, no reply
    after_retrieve = [{kind = "send", text = "..."}]   # optional: its answer once pages were fetched
    prompt_has = ["..."]             # text this turn's prompt must show
    prompt_lacks = ["..."]           # text it must not show
    retrieved_has = ["..."]          # text the prompt after the retrieve must show
    sends = ["Hi!"]                  # the agent's new lines in this chat, in order
    reaction = "👍"                  # the agent's reaction on the person's last message
    photo = "AgADCanalPhoto5.png"    # a library file the agent sent here, its description unchanged
    schedule = ["Sorting returns"]   # schedule activities that must exist
    blocked = true                   # whether the agent has blocked this person
    cleared = true                   # the chat's earlier messages are gone
    stopped = true                   # whether the agent is stopped (started again after the scenario)
    answered = false                 # the message starts no LLM call (no reply = ...)
    answer_bots = true               # an operator turns on the chat's "answer bots" setting first
    typing = {seconds = 6, then = "..."}   # the person types after saying; `then`: said while typing
    stored_has = ["..."]             # text the person's last message shows in Cindy's mirror
    stored_lacks = ["..."]           # text it must not show there
    loop_guard = true                # whether a loop_guard event stands in the person's chat
    chain = [{agent = "Wendy", reply = [...]}]   # in a group: the further LLM requests the turn
                                     # makes, in order, each by the named persona
    activity = ["spend cap reached"] # texts each in exactly one activity line of the scenario's chats

Strings in a reply may be placeholders, resolved when the stand-in answers: `$peer:Ben` (the chat id
of Ben's DM, an integer), `$last` (the id of the person's last message in this chat), `$in:SECONDS`
(an ISO time that many seconds from now, UTC), `$library:FILE` (the library item's unique id).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCENARIO_DIR = Path(__file__).resolve().parent / "files"
PERSONAS = ("Wendy", "Bramble", "Orla")
TRIGGERS = ("message", "xsend", "event", "nudge", "operator")
#: What an `operator` step may change: the agent's spend limits (engine/brakes.py), as the admin saves them.
OPERATOR_FIELDS = ("daily_spend_cap", "partner_turns_per_minute", "partner_turns_per_day")
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "thinking_tokens")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,30}$")
_SCENARIO_KEYS = {
    "persona",
    "about",
    "people",
    "operators",
    "sticker_sets",
    "library",
    "logs",
    "telegram",
    "bots",
    "user_ids",
    "group",
    "through_api",
    "turn",
}
_TURN_KEYS = {
    "say",
    "as",
    "trigger",
    "reply",
    "after_retrieve",
    "intent",
    "prompt_has",
    "prompt_lacks",
    "retrieved_has",
    "sends",
    "reaction",
    "photo",
    "schedule",
    "blocked",
    "cleared",
    "stopped",
    "answered",
    "answer_bots",
    "typing",
    "stored_has",
    "stored_lacks",
    "loop_guard",
    "chain",
    "operator",
    "usage",
    "braked",
    "activity",
}


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class Turn:
    number: int
    person: str
    trigger: str
    say: str
    replies: tuple[list[dict[str, Any]], ...]  # the stand-in's answers to this turn's requests, in order
    intent: str = ""
    prompt_has: tuple[str, ...] = ()
    prompt_lacks: tuple[str, ...] = ()
    retrieved_has: tuple[str, ...] = ()
    sends: tuple[str, ...] | None = None
    reaction: str = ""
    photo: str = ""
    schedule: tuple[str, ...] = ()
    blocked: bool | None = None
    cleared: bool = False
    stopped: bool | None = None
    answered: bool = True
    answer_bots: bool = False
    typing_seconds: float = 0.0  # 0: the person does not type
    typing_then: str = ""
    stored_has: tuple[str, ...] = ()
    stored_lacks: tuple[str, ...] = ()
    loop_guard: bool | None = None
    chain: tuple[str, ...] = ()  # the personas making the requests after the first, in order
    operator: tuple[tuple[str, str], ...] = ()  # (field, value) an operator saves before the turn
    usage: tuple[tuple[str, int], ...] = ()  # the token counts the model reports for this turn's replies
    braked: bool = False
    activity: tuple[str, ...] = ()

    @property
    def kinds(self) -> set[str]:
        return {task["kind"] for reply in self.replies for task in reply}


@dataclass(frozen=True)
class Scenario:
    path: Path
    persona: str
    about: str
    people: tuple[str, ...]
    turns: tuple[Turn, ...]
    operators: tuple[str, ...] = ()
    sticker_sets: tuple[str, ...] = ()
    library: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()
    telegram: bool = False
    bots: tuple[str, ...] = ()
    user_ids: dict[str, int] = field(default_factory=dict)
    group: str = ""  # the title of the group the people speak in ("" for DMs)
    group_agents: tuple[str, ...] = ()  # the other personas in that group
    through_api: bool = False  # the people speak through POST /api/v1/agents/{id}/sandbox/messages

    @property
    def group_title(self) -> str:
        """The group's sandbox title: unique across scenarios sharing a gateway."""
        return f"{self.group} {self.name}" if self.group else ""

    @property
    def name(self) -> str:
        return self.path.stem

    def user(self, person: str) -> str:
        """The sandbox name of `person` in this scenario: unique across scenarios sharing a gateway."""
        return f"{person} {self.name}"

    @property
    def kinds(self) -> set[str]:
        return set().union(*(turn.kinds for turn in self.turns))


def load(path: Path) -> Scenario:
    where = f"{path.relative_to(SCENARIO_DIR.parent) if path.is_relative_to(SCENARIO_DIR.parent) else path}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{where}: not valid TOML: {exc}") from exc
    unknown = set(data) - _SCENARIO_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {sorted(unknown)}: use {sorted(_SCENARIO_KEYS)}")
    persona = data.get("persona")
    if persona not in PERSONAS:
        raise ScenarioError(f"{where}: persona is {persona!r}: use one of {', '.join(PERSONAS)}")
    people = data.get("people") or []
    if not people or not all(isinstance(p, str) and _NAME.match(p) for p in people):
        raise ScenarioError(
            f"{where}: people is {people!r}: list one or more first names (letters and digits), "
            'e.g. people = ["Ada"]'
        )
    turns = data.get("turn") or []
    if not turns:
        raise ScenarioError(f"{where}: no [[turn]]: add at least one")
    group, group_agents = _group(where, data.get("group"), persona)
    if group and data.get("telegram"):
        raise ScenarioError(f"{where}: a group scenario plays on the sandbox only: remove telegram = true")
    through_api = data.get("through_api", False)
    if not isinstance(through_api, bool):
        raise ScenarioError(f"{where}: through_api is {through_api!r}: write true or false")
    if through_api and (data.get("telegram") or data.get("bots") or data.get("user_ids")):
        raise ScenarioError(
            f"{where}: through_api = true: the REST API speaks as sandbox people only: "
            "remove telegram, bots and user_ids"
        )
    return Scenario(
        path=path,
        persona=persona,
        about=str(data.get("about", "")),
        people=tuple(people),
        turns=tuple(
            _turn(where, number, raw, people, (persona, *group_agents) if group else ())
            for number, raw in enumerate(turns, start=1)
        ),
        operators=tuple(_operators(where, data.get("operators", []), people)),
        sticker_sets=tuple(_strings(where, "sticker_sets", data.get("sticker_sets", []))),
        library=tuple(_strings(where, "library", data.get("library", []))),
        logs=tuple(_strings(where, "logs", data.get("logs", []))),
        telegram=bool(data.get("telegram", False)),
        bots=tuple(_operators(where, data.get("bots", []), people, key="bots")),
        user_ids=_user_ids(where, data.get("user_ids", {}), people),
        group=group,
        group_agents=group_agents,
        through_api=through_api,
    )


def _group(where: str, value: Any, persona: str) -> tuple[str, tuple[str, ...]]:
    if value is None:
        return "", ()
    example = 'e.g. group = {title = "Garden club", agents = ["Wendy"]}'
    if not isinstance(value, dict) or set(value) - {"title", "agents"} or not value.get("title"):
        raise ScenarioError(f"{where}: group is {value!r}: give a title and the other agents; {example}")
    agents = _strings(where, "group agents", value.get("agents", []))
    wrong = [a for a in agents if a not in PERSONAS or a == persona]
    if wrong:
        raise ScenarioError(f"{where}: group agents {wrong}: name other personas than {persona}; {example}")
    return str(value["title"]), tuple(agents)


def _turn(
    where: str, number: int, raw: dict[str, Any], people: list[str], group_personas: tuple[str, ...] = ()
) -> Turn:
    at = f"{where}: turn {number}"
    unknown = set(raw) - _TURN_KEYS
    if unknown:
        raise ScenarioError(f"{at}: unknown key(s) {sorted(unknown)}: use {sorted(_TURN_KEYS)}")
    person = raw.get("as", people[0])
    if person not in people:
        raise ScenarioError(f"{at}: as = {person!r} is not one of people {people}: add them to people")
    trigger = raw.get("trigger", "message")
    if trigger not in TRIGGERS:
        raise ScenarioError(f"{at}: trigger is {trigger!r}: use one of {', '.join(TRIGGERS)}")
    say = raw.get("say", "")
    if (trigger == "message") != bool(say):
        raise ScenarioError(
            f'{at}: a turn either says something (say = "...") or waits for a trigger '
            '(trigger = "xsend", "event" or "nudge"), not both or neither'
        )
    if raw.get("intent") and trigger != "nudge":
        raise ScenarioError(f'{at}: intent is for an operator\'s nudge: add trigger = "nudge" or remove it')
    answered = raw.get("answered", True)
    if not answered and ("reply" in raw or "after_retrieve" in raw or trigger != "message"):
        raise ScenarioError(
            f"{at}: answered = false is a message that starts no LLM call: remove reply and after_retrieve"
        )
    operator = _operator(at, raw.get("operator", {}))
    if trigger == "operator" and not operator:
        raise ScenarioError(
            f'{at}: trigger = "operator" needs an operator change, e.g. operator = '
            '{daily_spend_cap = "1.00"}'
        )
    for key in ("blocked", "cleared", "stopped", "answered", "answer_bots", "loop_guard", "braked"):
        if key in raw and not isinstance(raw[key], bool):
            raise ScenarioError(f"{at}: {key} is {raw[key]!r}: use true or false")
    braked = raw.get("braked", False)
    if braked:
        if "reply" in raw or "after_retrieve" in raw or trigger != "message":
            raise ScenarioError(
                f"{at}: a braked turn is a message the brake holds: it has a say and no reply (the turn "
                'that plans it later, e.g. trigger = "operator", has the reply)'
            )
        return Turn(
            number=number,
            person=person,
            trigger=trigger,
            say=say,
            replies=(),
            operator=operator,
            sends=tuple(_strings(at, "sends", raw.get("sends", []))),
            braked=True,
            activity=tuple(_strings(at, "activity", raw.get("activity", []))),
        )
    replies = [_reply(at, "reply", raw.get("reply"))] if answered else []
    if "after_retrieve" in raw:
        replies.append(_reply(at, "after_retrieve", raw["after_retrieve"]))
    typing = _typing(at, raw.get("typing"), trigger)
    chain: list[str] = []
    for link in raw.get("chain", []):
        if (
            not isinstance(link, dict)
            or set(link) != {"agent", "reply"}
            or link["agent"] not in group_personas
        ):
            raise ScenarioError(
                f"{at}: chain entry {link!r}: give agent (a persona of the group scenario: "
                f'{list(group_personas)}) and reply, e.g. chain = [{{agent = "Wendy", reply = [...]}}]'
            )
        chain.append(link["agent"])
        replies.append(_reply(at, "chain reply", link["reply"]))
    usage = raw.get("usage", {})
    if not isinstance(usage, dict) or any(
        k not in USAGE_KEYS or not isinstance(v, int) or v < 0 for k, v in usage.items()
    ):
        raise ScenarioError(
            f"{at}: usage is {usage!r}: use token counts of {', '.join(USAGE_KEYS)}, e.g. "
            "usage = {input_tokens = 6000, output_tokens = 1000}"
        )
    sends = raw.get("sends")
    return Turn(
        number=number,
        person=person,
        trigger=trigger,
        say=say,
        replies=tuple(replies),
        intent=str(raw.get("intent", "")),
        prompt_has=tuple(_strings(at, "prompt_has", raw.get("prompt_has", []))),
        prompt_lacks=tuple(_strings(at, "prompt_lacks", raw.get("prompt_lacks", []))),
        retrieved_has=tuple(_strings(at, "retrieved_has", raw.get("retrieved_has", []))),
        sends=None if sends is None else tuple(_strings(at, "sends", sends)),
        reaction=str(raw.get("reaction", "")),
        photo=str(raw.get("photo", "")),
        schedule=tuple(_strings(at, "schedule", raw.get("schedule", []))),
        blocked=raw.get("blocked"),
        cleared=raw.get("cleared", False),
        stopped=raw.get("stopped"),
        answered=answered,
        answer_bots=raw.get("answer_bots", False),
        typing_seconds=typing[0],
        typing_then=typing[1],
        stored_has=tuple(_strings(at, "stored_has", raw.get("stored_has", []))),
        stored_lacks=tuple(_strings(at, "stored_lacks", raw.get("stored_lacks", []))),
        loop_guard=raw.get("loop_guard"),
        chain=tuple(chain),
        operator=operator,
        usage=tuple(usage.items()),
        activity=tuple(_strings(at, "activity", raw.get("activity", []))),
    )


def _typing(at: str, value: Any, trigger: str) -> tuple[float, str]:
    """(seconds, then) of a turn's `typing = {seconds = N, then = "..."}`; (0, "") without one."""
    if value is None:
        return 0.0, ""
    example = 'e.g. typing = {seconds = 6} or typing = {seconds = 6, then = "One more thing"}'
    if not isinstance(value, dict) or set(value) - {"seconds", "then"}:
        raise ScenarioError(f"{at}: typing is {value!r}: give seconds and, optionally, then; {example}")
    seconds = value.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= 6:
        raise ScenarioError(
            f"{at}: typing seconds is {seconds!r}: give more than 0 and at most 6 (one typing update); "
            + example
        )
    if trigger != "message":
        raise ScenarioError(f'{at}: typing follows what the person says: add say = "..."')
    then = value.get("then", "")
    if not isinstance(then, str):
        raise ScenarioError(f"{at}: typing then is {then!r}: the text said while typing; {example}")
    return float(seconds), then


def _user_ids(where: str, value: Any, people: list[str]) -> dict[str, int]:
    if not isinstance(value, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value.values()
    ):
        raise ScenarioError(
            f"{where}: user_ids is {value!r}: map people to user ids, e.g. user_ids = {{Tg = 777000}}"
        )
    strangers = [name for name in value if name not in people]
    if strangers:
        raise ScenarioError(f"{where}: user_ids {strangers} are not in people {people}: add them to people")
    return dict(value)


def _operator(at: str, value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or any(
        k not in OPERATOR_FIELDS or not isinstance(v, str | int) for k, v in value.items()
    ):
        raise ScenarioError(
            f'{at}: operator is {value!r}: set one or more of {", ".join(OPERATOR_FIELDS)} ("" clears '
            'one), e.g. operator = {daily_spend_cap = "0.01"}'
        )
    return tuple((k, str(v)) for k, v in value.items())


def _operators(where: str, value: Any, people: list[str], key: str = "operators") -> list[str]:
    names = _strings(where, key, value)
    strangers = [name for name in names if name not in people]
    if strangers:
        raise ScenarioError(f"{where}: {key} {strangers} are not in people {people}: add them to people")
    return names


def _reply(at: str, key: str, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(t, dict) and "kind" in t for t in value):
        raise ScenarioError(
            f'{at}: {key} must be a list of tasks, each with a kind, e.g. {key} = [{{kind = "send", '
            'text = "Hi"}]'
        )
    return value


def _strings(at: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ScenarioError(f'{at}: {key} is {value!r}: use a list of strings, e.g. {key} = ["..."]')
    return value


def all_scenarios() -> list[Scenario]:
    return [load(path) for path in sorted(SCENARIO_DIR.glob("*.toml"))]
