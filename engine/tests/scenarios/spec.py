"""Scenario files: one TOML file per scenario, read with the standard library's tomllib.

A scenario drives one shipped persona through scripted turns. Its format (docs/scenarios.md,
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
    after = "bramble_across"         # optional: a scenario this one builds on; played first on the same
                                     # stage when the stage has not played it yet (e.g. run alone)
    group = {title = "Club", agents = ["Wendy"]}   # optional: the people speak in this group, which
                                     # these other personas are in too (with agents: sandbox only)
    saved_stickers = ["KeptSet::🦔"]  # optional: stickers the persona's account keeps in its Saved
                                     # Messages (from HARNESS_STICKER_SETS), before the stage starts
    group = {title = "Allotment", forum = true}    # a group with topics; without other agents it may
                                     # also play on Telegram (a forum supergroup on the stand-in)
    through_api = true               # optional: the people speak through the REST API (sandbox only)
    llm = "ollama:llama3.1"          # optional: the persona's LLM (its `# LLM`) for this scenario, saved
                                     # as the agent's admin page does before the first turn and set
                                     # back to the shipped one after the last; `ollama:MODEL` is the
                                     # stage's self-hosted endpoint (stage.ENDPOINT)

    [backlog]                        # optional: a long earlier DM with the first person,
    count = 2000                     # that many messages, alternating person and persona, written through
    lines = ["...", "..."]           # the ingest path before the first turn; `lines` cycle, `planted`
    planted = [{at = 3, text = "..."}]   # messages replace them at those positions (1 = the oldest);
                                     # a summary covers all of them, so none needs summarizing

    [[turn]]
    say = "Hello"                    # the person's message, or a turn started otherwise:
    # voice = {name = "hours", seconds = 3, transcript = "..."}   # or a voice note (see below)
    # trigger = "xsend" | "event"    #   by the agent's own xsend or event (the turn waits for it), or
    # trigger = "nudge"              #   by an operator's nudge (the admin's XSend), with `intent = "..."`
    # trigger = "operator"           #   by the operator's `operator` change (a held turn plans again)
    # trigger = "mark_unread"        #   by the agent's account marking the person's chat unread
    # trigger = "consolidate"        #   by the chat going quiet (a consolidation turn comes by itself)
    as = "Ada"                       # optional: whose chat this turn is in
    topic = "Seeds"                  # in a forum group: the topic the person writes in (made on first
                                     #   use; none: General). `sends` then lists the agent's new lines
                                     #   in this topic, and a new line of the agent anywhere else fails
    operator = {daily_spend_cap = "0.01"}   # optional: spend limits an operator saves first, as the
                                     #   admin does ("" clears one)
    parameters = {CINDY_HISTORY_SIZE = "2"}   # optional: global parameters an operator saves first on
                                     #   the admin's LLMs page ("" resets one to the environment's);
                                     #   each one set must be reset by a later turn of the scenario
    reply = [{kind = "send", text = "Hi!"}]            # what the LLM stand-in answers
    usage = {input_tokens = 6000, output_tokens = 1000}   # optional: the tokens the model reports
    braked = true                    # optional: a spend brake holds the turn: no LLM request, no reply
    after_retrieve = [{kind = "send", text = "..."}]   # optional: its answer once pages were fetched
    prompt_has = ["..."]             # text this turn's prompt must show
    prompt_lacks = ["..."]           # text it must not show
    retrieved_has = ["..."]          # text the prompt after the retrieve must show
    retrieved_lacks = ["..."]        # text it must not show (e.g. another chat's, after a recall)
    sends = ["Hi!"]                  # the agent's new lines in this chat, in order
    reaction = "👍"                  # the agent's reaction on the person's last message
    photo = "AgADCanalPhoto5.png"    # a library file the agent sent here, its description unchanged
    picture = "A sketch of ..."      # a picture the agent made with this description: in its library
                                     #   (the description curated) and sent here, opening as an image
    pictures = 1                     # the image calls (pictures made) this turn, e.g. 0 when refused
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
    reads = false                    # whether the agent's read mark of the chat moved in this turn
                                     #   (false: it read nothing, e.g. a consolidation turn)
    chain = [{agent = "Wendy", reply = [...]}]   # in a group: the further LLM requests the turn
                                     # makes, in order, each by the named persona
    activity = ["spend cap reached"] # texts each in exactly one activity line of the scenario's chats
    media = {kind = "animated_sticker", name = "🟥"}   # the message carries media, `say` its caption:
                                     # an animated (TGS) sticker of ANIMATED_SET, or
                                     # {kind = "video" | "video_note", seconds = 720}, or
                                     # {kind = "photo", text = "kite"} (a JPEG showing the text)
    save_media = "A red kite ..."    # an operator first saves the media of the person's latest message
                                     #   that has one to the agent's library with this description, as
                                     #   the conversation page's "Save to library" does (on Telegram the
                                     #   gateway sends it to Saved Messages); the turn starts once the
                                     #   library holds it
    describe = "images"              # the media descriptions this turn requested: "images" (one or
                                     # more, each with only image input) or "none"
    explicit_cache = "made"          # the planning call made a Gemini explicit cache and used it;
                                     # "used": one made before; "none": none
    history = [{text = "..."}, {text = "...", agent = true}]   # an operator first imports these past
                                     #   messages of the person's DM (the persona's with agent = true)
                                     #   from a Telegram Desktop export, `manage.py importchat`
                                     #   (DMs only; on the stand-in, exported from the persona's account)

A `voice` turn says a voice note instead of text: an OGG/Opus tone `seconds` long (at most 60), made
once per `name` in the scenario (default "voice"); the stand-in answers its transcription request with
`transcript`. The same `name` in a later turn sends the same note again (the same media unique id) and
has no `transcript`: the harness checks that it is not transcribed again.
    mute = true                      # the operator mutes the person's chat (or the group) first, as the
                                     #   admin does (on Telegram too); the chat must exist already
    unseen = true                    # the message reaches Telegram but its update is lost: only the
                                     #   unread scan can find it. Once the turn is done, the update comes
                                     #   after all with an edit of the message: it must start no turn
    pause = 16                       # optional: seconds to let pass before the turn (e.g. the online
                                     #   window, CINDY_ONLINE_WINDOW_SECONDS, which the stage sets to
                                     #   ONLINE_WINDOW_SECONDS)
    start_delay = false              # whether the turn's first send paid the start-typing delay (false:
                                     #   the agent was already online in the chat)
    contacts = ["Ada"]               # exactly which of the people are in the agent's contacts
    online = true                    # whether the agent's account shows online after the turn
    online_before = false            # whether it shows online before the turn's action (after a pause)
    rights = "restricted"            # in a group: an admin first changes the persona's right to write:
                                     #   "restricted", "read_only" (only admins post), "banned", or ""
                                     #   (it may write again)
    [turn.routes]                    # optional, after the turn's keys: an outage of one model on the
    fail = {model = "gemini-2.5-flash", status = 503, times = 2}   # stand-in (the next `times` requests
    tried = ["gemini/gemini-2.5-flash", "openai/gpt-5-mini"]       # for it fail), the routes the
    answered_by = "openai/gpt-5-mini (fallback after gemini/gemini-2.5-flash failed)"   # planning asked
    breakers = {"gemini/gemini-2.5-flash" = "open"}   # and the one that answered, the breakers after
    cooled = "gemini/gemini-2.5-flash"               # it, a cool-down waited out first (routes.py)
    refuse_response_format = 400     # the endpoint refuses the next `response_format` (routes.py), and:
    formats = ["response_format", "prompt"]   # how each endpoint request asked for the format,
    markdown = true                  # its answer without one in the original's Markdown blocks,
    note = "ollama refused response_format (400"   # the answering call's note

Strings in a reply may be placeholders, resolved when the stand-in answers: `$peer:Ben` (the chat id
of Ben's DM, an integer), `$last` (the id of the person's last message in this chat), `$in:SECONDS`
(an ISO time that many seconds from now, UTC), `$library:FILE` (the library item's unique id),
`$picture:N` (the unique id of the picture turn N's `picture` names, in the agent's library),
`$saved:N` (the unique id of the media turn N's `save_media` put in the agent's library).

The stage allows each agent CINDY_IMAGES_PER_DAY = 2 pictures; the stand-in answers an image request
(one asking for the IMAGE modality) with a new PNG.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.tests.scenarios.routes import RouteChecks, RoutesError, markdown_reply, parse_routes

SCENARIO_DIR = Path(__file__).resolve().parent / "files"
PERSONAS = ("Wendy", "Bramble", "Orla")
TRIGGERS = ("message", "xsend", "event", "nudge", "operator", "mark_unread", "consolidate")
#: What an `operator` step may change: the agent's spend limits (engine/brakes.py), as the admin saves them.
OPERATOR_FIELDS = ("daily_spend_cap", "partner_turns_per_minute", "partner_turns_per_day")
USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "thinking_tokens")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,30}$")
#: Sticker sets both worlds have besides the personas' own, as (emoji, premium): the sandbox stage puts
#: them in the catalog (as an earlier import from Telegram would have), the MTProto stand-in serves them
#: as Telegram does (a premium sticker carries a premium animation).
HARNESS_STICKER_SETS = {"GnomeParty": [("🌷", False), ("🎩", True)], "KeptSet": [("🦔", False)]}
#: The animated (TGS) sticker set people send from: (short name, emoji); each sticker is a real small
#: Lottie animation, gzipped (cindy_site.testing.mtproto.media.tgs_bytes).
ANIMATED_SET = ("PersonMotion", ("🟥", "🟦"))
MEDIA_KINDS = ("animated_sticker", "video", "video_note", "photo")
DESCRIBE = ("images", "none")
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
    "saved_stickers",
    "through_api",
    "turn",
    "backlog",
    "llm",
    "after",
}
_BACKLOG_KEYS = {"count", "lines", "planted"}
#: The most messages a backlog may hold (seeding 2,000 takes a few seconds).
MAX_BACKLOG = 5000
_TURN_KEYS = {
    "say",
    "voice",
    "as",
    "trigger",
    "reply",
    "after_retrieve",
    "intent",
    "prompt_has",
    "prompt_lacks",
    "retrieved_has",
    "retrieved_lacks",
    "sends",
    "reaction",
    "photo",
    "picture",
    "pictures",
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
    "reads",
    "chain",
    "operator",
    "parameters",
    "usage",
    "braked",
    "activity",
    "media",
    "describe",
    "explicit_cache",
    "mute",
    "save_media",
    "history",
    "unseen",
    "topic",
    "pause",
    "start_delay",
    "contacts",
    "online",
    "online_before",
    "rights",
    "routes",
}
#: How a group may refuse the persona's writing (a turn's `rights`): `SandboxMember.cannot_write`, and
#: on the MTProto stand-in a broadcast channel, a restriction or a ban in the supergroup.
RIGHTS = ("read_only", "restricted", "banned", "")
#: What a turn's planning call did with Gemini explicit caches (a turn's `explicit_cache`).
EXPLICIT_CACHE = ("made", "used", "none")


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
    retrieved_lacks: tuple[str, ...] = ()
    sends: tuple[str, ...] | None = None
    reaction: str = ""
    photo: str = ""
    picture: str = ""
    pictures: int | None = None
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
    reads: bool | None = None  # whether the agent's read mark of the chat moves during the turn
    chain: tuple[str, ...] = ()  # the personas making the requests after the first, in order
    operator: tuple[tuple[str, str], ...] = ()  # (field, value) an operator saves before the turn
    parameters: tuple[tuple[str, str], ...] = ()  # (name, value) global parameters saved before the turn
    usage: tuple[tuple[str, int], ...] = ()  # the token counts the model reports for this turn's replies
    braked: bool = False
    activity: tuple[str, ...] = ()
    voice: str = ""  # the name of the voice note said instead of text ("" for none)
    voice_seconds: float = 0.0
    voice_transcript: str = ""  # what the stand-in transcribes it as; "" for a note said before
    media: tuple[tuple[str, Any], ...] = ()  # the media the message carries: (("kind", ...), ...)
    describe: str = ""  # "images" | "none" | "" (not checked)
    #: "made": this turn's planning call made a Gemini explicit cache and used it; "used": it used one
    #: made before; "none": it used none; "": not checked.
    explicit_cache: str = ""
    mute: bool = False
    save_media: str = ""  # the description an operator saves the person's latest media with, first
    history: tuple[tuple[str, bool], ...] = ()  # (text, by the persona) imported from an export, first
    unseen: bool = False
    topic: str = ""  # the forum topic the turn is in ("": General, or not a forum)
    pause: float = 0.0
    start_delay: bool | None = None
    contacts: tuple[str, ...] | None = None
    online: bool | None = None
    online_before: bool | None = None
    rights: str | None = None  # a RIGHTS value an admin sets before the turn; None: unchanged
    routes: RouteChecks | None = None  # the turn's LLM routes: an outage, a cool-down, checks (routes.py)

    @property
    def kinds(self) -> set[str]:
        return {task["kind"] for reply in self.replies for task in reply}

    @property
    def media_spec(self) -> dict[str, Any]:
        return dict(self.media)


@dataclass(frozen=True)
class Backlog:
    """An earlier chat of `count` messages with the scenario's first person, seeded before the first
    turn: message n (1 = the oldest) is `planted[n]` if given, else `lines` cycled; odd ones are the
    person's, even ones the persona's."""

    count: int
    lines: tuple[str, ...]
    planted: tuple[tuple[int, str], ...] = ()

    def text(self, number: int) -> str:
        return dict(self.planted).get(number) or self.lines[(number - 1) % len(self.lines)]


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
    saved_stickers: tuple[tuple[str, str], ...] = ()  # (set, emoji) kept in the account's Saved Messages
    forum: bool = False  # the group has topics
    through_api: bool = False  # the people speak through POST /api/v1/agents/{id}/sandbox/messages
    backlog: Backlog | None = None  # an earlier chat with the first person, seeded before the first turn
    llm: str = ""  # the persona's LLM for this scenario (its `# LLM`), e.g. "ollama:llama3.1"
    after: str = ""  # the scenario this one builds on (what it said is this one's past)

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
    group, group_agents, forum = _group(where, data.get("group"), persona)
    if group_agents and data.get("telegram"):
        raise ScenarioError(
            f"{where}: a group scenario with other agents plays on the sandbox only: remove telegram = true"
        )
    topics = [t.get("topic") for t in turns if isinstance(t, dict) and "topic" in t]
    if topics and not forum:
        raise ScenarioError(
            f'{where}: a turn has a topic, but the group has none: set group = {{title = "...", forum = true}}'
        )
    if not all(isinstance(t, str) and 0 < len(t.strip()) <= 128 for t in topics):
        raise ScenarioError(
            f'{where}: topic {topics!r}: give each a title of 1 to 128 characters, e.g. topic = "Seeds"'
        )
    parsed = tuple(
        _turn(where, number, raw, people, (persona, *group_agents) if group else ())
        for number, raw in enumerate(turns, start=1)
    )
    _check_voices(where, parsed)
    _check_parameters_reset(where, parsed)
    special = set(data.get("bots") or []) | set(data.get("user_ids") or {})
    for turn in parsed:
        if turn.voice and turn.person in special:
            raise ScenarioError(
                f"{where}: turn {turn.number}: {turn.person} says a voice note as a person: a bot or a "
                "fixed user id (bots, user_ids) sends text only"
            )
    if any(turn.history for turn in parsed) and group:
        raise ScenarioError(
            f"{where}: a turn imports history: an imported export lands in a DM here; remove group"
        )
    through_api = data.get("through_api", False)
    if not isinstance(through_api, bool):
        raise ScenarioError(f"{where}: through_api is {through_api!r}: write true or false")
    if through_api and (data.get("telegram") or data.get("bots") or data.get("user_ids")):
        raise ScenarioError(
            f"{where}: through_api = true: the REST API speaks as sandbox people only: "
            "remove telegram, bots and user_ids"
        )
    backlog = _backlog(where, data.get("backlog"))
    if backlog is not None and (group or through_api):
        raise ScenarioError(
            f"{where}: a backlog is seeded in a DM with the first person: remove group and through_api, "
            "or the [backlog] table"
        )
    llm = data.get("llm", "")
    if not isinstance(llm, str) or ("llm" in data and (not llm.strip() or len(llm.split()) != 1)):
        raise ScenarioError(
            f"{where}: llm is {llm!r}: the LLM name the persona's `# LLM` would hold, one word, e.g. "
            'llm = "ollama:llama3.1" (an endpoint of the stage) or llm = "gpt-5-mini"'
        )
    after = _after(where, path, data.get("after", ""), telegram=bool(data.get("telegram", False)))
    return Scenario(
        path=path,
        persona=persona,
        about=str(data.get("about", "")),
        people=tuple(people),
        turns=parsed,
        operators=tuple(_operators(where, data.get("operators", []), people)),
        sticker_sets=tuple(_strings(where, "sticker_sets", data.get("sticker_sets", []))),
        library=tuple(_strings(where, "library", data.get("library", []))),
        logs=tuple(_strings(where, "logs", data.get("logs", []))),
        telegram=bool(data.get("telegram", False)),
        bots=tuple(_operators(where, data.get("bots", []), people, key="bots")),
        user_ids=_user_ids(where, data.get("user_ids", {}), people),
        group=group,
        group_agents=group_agents,
        saved_stickers=_saved_stickers(where, data.get("saved_stickers", [])),
        forum=forum,
        through_api=through_api,
        backlog=backlog,
        llm=llm.strip(),
        after=after,
    )


def _after(where: str, path: Path, value: Any, *, telegram: bool) -> str:
    """The name of the scenario this one builds on: another file of the same folder, on the same
    transports (a Telegram scenario's past must be played on the stand-in too)."""
    if value == "":
        return ""
    if not isinstance(value, str) or value == path.stem or not (path.parent / f"{value}.toml").is_file():
        others = sorted(p.stem for p in path.parent.glob("*.toml") if p != path)
        raise ScenarioError(
            f"{where}: after is {value!r}: name another scenario file of {path.parent.name}/ without "
            f"its .toml, e.g. after = {others[0]!r}"
            if others
            else f"{where}: after is {value!r}: no other scenario"
        )
    if telegram:
        try:
            prior = tomllib.loads((path.parent / f"{value}.toml").read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(f"{where}: after = {value!r}: that file is not valid TOML: {exc}") from exc
        if not prior.get("telegram"):
            raise ScenarioError(
                f"{where}: after = {value!r}: this scenario plays on Telegram, that one does not: "
                f"add telegram = true to {value}.toml or remove telegram = true here"
            )
    return value


def _backlog(where: str, value: Any) -> Backlog | None:
    if value is None:
        return None
    at = f"{where}: [backlog]"
    if not isinstance(value, dict):
        raise ScenarioError(f"{at} must be a table: [backlog] with count, lines and planted")
    unknown = set(value) - _BACKLOG_KEYS
    if unknown:
        raise ScenarioError(f"{at}: unknown key(s) {sorted(unknown)}: use {sorted(_BACKLOG_KEYS)}")
    count = value.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_BACKLOG:
        raise ScenarioError(f"{at}: count is {count!r}: give a number of messages from 1 to {MAX_BACKLOG}")
    lines = tuple(_strings(at, "lines", value.get("lines", [])))
    if not lines or not all(line.strip() for line in lines):
        raise ScenarioError(
            f'{at}: lines is {list(lines)!r}: give one or more non-empty lines, e.g. lines = ["..."]'
        )
    planted = []
    for item in value.get("planted", []) if isinstance(value.get("planted", []), list) else [None]:
        position = item.get("at") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or set(item) != {"at", "text"}
            or not isinstance(position, int)
            or not 1 <= position <= count
            or not isinstance(text, str)
            or not text.strip()
        ):
            raise ScenarioError(
                f'{at}: planted has {item!r}: give each as {{at = N, text = "..."}} with N from 1 to {count}'
            )
        planted.append((position, text))
    return Backlog(count=count, lines=lines, planted=tuple(planted))


def _saved_stickers(where: str, value: Any) -> tuple[tuple[str, str], ...]:
    found = []
    for item in _strings(where, "saved_stickers", value):
        set_name, _, name = item.partition("::")
        if name not in [e for e, _p in HARNESS_STICKER_SETS.get(set_name, [])]:
            known = [f"{s}::{e}" for s, stickers in HARNESS_STICKER_SETS.items() for e, _p in stickers]
            raise ScenarioError(f"{where}: saved_stickers has {item!r}: name one of {known}")
        found.append((set_name, name))
    return tuple(found)


def _media(at: str, value: Any, trigger: str) -> tuple[tuple[str, Any], ...]:
    """The `media = {...}` a person's message carries, checked."""
    if value is None:
        return ()
    example = (
        'e.g. media = {kind = "animated_sticker", name = "🟥"} or media = {kind = "video", seconds = 720}'
    )
    kind = value.get("kind") if isinstance(value, dict) else None
    if kind not in MEDIA_KINDS:
        raise ScenarioError(
            f"{at}: media is {value!r}: kind must be one of {', '.join(MEDIA_KINDS)}; {example}"
        )
    if trigger != "message":
        raise ScenarioError(f'{at}: media comes with what the person says: add say = "..." (its caption)')
    if kind == "photo":
        if set(value) != {"kind", "text"} or not isinstance(value["text"], str) or not value["text"].strip():
            raise ScenarioError(
                f'{at}: media is {value!r}: a photo names the text it shows; e.g. media = {{kind = "photo", text = "kite"}}'
            )
    elif kind == "animated_sticker":
        if set(value) != {"kind", "name"} or value["name"] not in ANIMATED_SET[1]:
            raise ScenarioError(
                f"{at}: media is {value!r}: an animated sticker names one of {list(ANIMATED_SET[1])}; {example}"
            )
    else:
        seconds = value.get("seconds")
        if (
            set(value) != {"kind", "seconds"}
            or isinstance(seconds, bool)
            or not isinstance(seconds, int)
            or seconds <= 0
        ):
            raise ScenarioError(
                f"{at}: media is {value!r}: a {kind} gives its length in whole seconds; {example}"
            )
    return tuple(sorted(value.items()))


def _history(at: str, value: Any) -> tuple[tuple[str, bool], ...]:
    """A turn's `history`: the past messages an operator imports first, as (text, by the persona)."""
    if value is None:
        return ()
    example = 'e.g. history = [{text = "Remember the jam?"}, {text = "Of course", agent = true}]'
    if not isinstance(value, list) or not value:
        raise ScenarioError(f"{at}: history is {value!r}: give a list of past messages; {example}")
    lines = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"text", "agent"}:
            raise ScenarioError(
                f"{at}: history has {item!r}: give text and, for the persona's, agent = true; {example}"
            )
        text, agent = item.get("text"), item.get("agent", False)
        if not isinstance(text, str) or not text.strip() or not isinstance(agent, bool):
            raise ScenarioError(
                f"{at}: history has {item!r}: text is the message, agent true or false; {example}"
            )
        lines.append((text, agent))
    return tuple(lines)


def _save_media(at: str, value: Any) -> str:
    """A turn's `save_media`: the description an operator saves the person's latest media with."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(
            f"{at}: save_media is {value!r}: give the description the operator saves it with, e.g. "
            'save_media = "A red kite over the harbour wall"'
        )
    return value.strip()


def _group(where: str, value: Any, persona: str) -> tuple[str, tuple[str, ...], bool]:
    if value is None:
        return "", (), False
    example = (
        'e.g. group = {title = "Garden club", agents = ["Wendy"]} or {title = "Allotment", forum = true}'
    )
    if not isinstance(value, dict) or set(value) - {"title", "agents", "forum"} or not value.get("title"):
        raise ScenarioError(
            f"{where}: group is {value!r}: give a title, the other agents and whether it has topics; {example}"
        )
    if not isinstance(value.get("forum", False), bool):
        raise ScenarioError(f"{where}: group forum is {value['forum']!r}: use true or false; {example}")
    agents = _strings(where, "group agents", value.get("agents", []))
    wrong = [a for a in agents if a not in PERSONAS or a == persona]
    if wrong:
        raise ScenarioError(f"{where}: group agents {wrong}: name other personas than {persona}; {example}")
    return str(value["title"]), tuple(agents), bool(value.get("forum", False))


def _turn(
    where: str,
    number: int,
    raw: dict[str, Any],
    people: list[str],
    group_personas: tuple[str, ...] = (),
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
    voice = _voice(at, raw.get("voice"))
    if say and voice:
        raise ScenarioError(f"{at}: a turn says text or a voice note, not both: remove say or voice")
    if (trigger == "message") != bool(say or voice):
        raise ScenarioError(
            f'{at}: a turn either says something (say = "..." or voice = {{...}}) or waits for a trigger '
            '(trigger = "xsend", "event", "consolidate", "nudge", "operator" or "mark_unread"), not both or '
            "neither"
        )
    if voice and "typing" in raw:
        raise ScenarioError(f"{at}: typing follows a text message: remove typing from the voice turn")
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
    for key in (
        "blocked",
        "cleared",
        "stopped",
        "answered",
        "answer_bots",
        "loop_guard",
        "reads",
        "braked",
        "mute",
        "unseen",
        "start_delay",
        "online",
        "online_before",
    ):
        if key in raw and not isinstance(raw[key], bool):
            raise ScenarioError(f"{at}: {key} is {raw[key]!r}: use true or false")
    if raw.get("unseen") and (trigger != "message" or "typing" in raw or raw.get("braked")):
        raise ScenarioError(
            f'{at}: unseen is a message whose update is lost: give say = "..." and no typing or braked'
        )
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
            topic=str(raw.get("topic", "")).strip(),
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
    pause = raw.get("pause", 0)
    if isinstance(pause, bool) or not isinstance(pause, int | float) or not 0 <= pause <= 60:
        raise ScenarioError(
            f"{at}: pause is {pause!r}: give the seconds to wait first, 0 to 60, e.g. pause = 16"
        )
    if "start_delay" in raw and not any(t.get("kind") == "send" for reply in replies for t in reply):
        raise ScenarioError(
            f'{at}: start_delay is about the turn\'s first send: add a {{kind = "send"}} reply'
        )
    rights = raw.get("rights")
    if rights is not None and (rights not in RIGHTS or not group_personas):
        raise ScenarioError(
            f"{at}: rights is {rights!r}: in a group scenario, use one of {', '.join(map(repr, RIGHTS))}, "
            'e.g. rights = "restricted"'
        )
    contacts = raw.get("contacts")
    if contacts is not None:
        strangers = [p for p in _strings(at, "contacts", contacts) if p not in people]
        if strangers:
            raise ScenarioError(f"{at}: contacts {strangers} are not in people {people}: add them to people")
    sends = raw.get("sends")
    describe = raw.get("describe", "")
    if describe not in ("", *DESCRIBE):
        raise ScenarioError(f'{at}: describe is {describe!r}: use "images" or "none"')
    if raw.get("media") is not None and typing[0]:
        raise ScenarioError(f"{at}: a message with media is sent without typing: remove typing or media")
    explicit_cache = raw.get("explicit_cache", "")
    if explicit_cache not in ("", *EXPLICIT_CACHE):
        raise ScenarioError(f'{at}: explicit_cache is {explicit_cache!r}: use "made", "used" or "none"')
    pictures = raw.get("pictures")
    if pictures is not None and (isinstance(pictures, bool) or not isinstance(pictures, int) or pictures < 0):
        raise ScenarioError(f"{at}: pictures is {pictures!r}: give how many pictures the turn makes, e.g. 0")
    if voice:
        return Turn(
            number=number,
            person=person,
            trigger=trigger,
            say="",
            replies=tuple(replies),
            prompt_has=tuple(_strings(at, "prompt_has", raw.get("prompt_has", []))),
            prompt_lacks=tuple(_strings(at, "prompt_lacks", raw.get("prompt_lacks", []))),
            sends=None if sends is None else tuple(_strings(at, "sends", sends)),
            reaction=str(raw.get("reaction", "")),
            usage=tuple(usage.items()),
            activity=tuple(_strings(at, "activity", raw.get("activity", []))),
            voice=voice[0],
            voice_seconds=voice[1],
            voice_transcript=voice[2],
        )
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
        retrieved_lacks=tuple(_strings(at, "retrieved_lacks", raw.get("retrieved_lacks", []))),
        sends=None if sends is None else tuple(_strings(at, "sends", sends)),
        reaction=str(raw.get("reaction", "")),
        photo=str(raw.get("photo", "")),
        picture=str(raw.get("picture", "")),
        pictures=pictures,
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
        reads=raw.get("reads"),
        chain=tuple(chain),
        operator=operator,
        parameters=_parameters(at, raw.get("parameters", {})),
        usage=tuple(usage.items()),
        activity=tuple(_strings(at, "activity", raw.get("activity", []))),
        media=_media(at, raw.get("media"), trigger),
        describe=describe,
        explicit_cache=explicit_cache,
        mute=raw.get("mute", False),
        save_media=_save_media(at, raw.get("save_media")),
        history=_history(at, raw.get("history")),
        unseen=raw.get("unseen", False),
        topic=str(raw.get("topic", "")).strip(),
        pause=float(pause),
        start_delay=raw.get("start_delay"),
        contacts=None if contacts is None else tuple(contacts),
        online=raw.get("online"),
        online_before=raw.get("online_before"),
        rights=rights,
        routes=_routes(at, raw.get("routes"), replies),
    )


def _routes(at: str, value: Any, replies: list[list[dict[str, Any]]]) -> RouteChecks | None:
    try:
        checks = parse_routes(at, value)
        if checks is not None and checks.markdown:
            for reply in replies:
                markdown_reply(reply)
    except RoutesError as exc:
        raise ScenarioError(f"{at}: {exc}" if not str(exc).startswith(at) else str(exc)) from exc
    return checks


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


def _voice(at: str, value: Any) -> tuple[str, float, str] | None:
    """(name, seconds, transcript) of a turn's `voice = {...}`; None without one."""
    if value is None:
        return None
    example = 'e.g. voice = {name = "hours", seconds = 3, transcript = "Are you open on Sunday?"}'
    if not isinstance(value, dict) or set(value) - {"name", "seconds", "transcript"}:
        raise ScenarioError(f"{at}: voice is {value!r}: give name, seconds and transcript; {example}")
    name = value.get("name", "voice")
    seconds = value.get("seconds", 0)
    transcript = value.get("transcript", "")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ScenarioError(f"{at}: voice name is {name!r}: a word of letters and digits; {example}")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 60:
        raise ScenarioError(f"{at}: voice seconds is {seconds!r}: give more than 0 and at most 60; {example}")
    if not isinstance(transcript, str):
        raise ScenarioError(f"{at}: voice transcript is {transcript!r}: the words said; {example}")
    return name, float(seconds), transcript


def _check_voices(where: str, turns: tuple[Turn, ...]) -> None:
    """A note's first turn gives its length and transcript; a later one says it again, without them."""
    said: set[str] = set()
    for turn in turns:
        if not turn.voice:
            continue
        at = f"{where}: turn {turn.number}"
        if turn.voice in said and (turn.voice_transcript or turn.voice_seconds):
            raise ScenarioError(
                f"{at}: voice {turn.voice!r} was said before: the same note again has no seconds or "
                f'transcript (it is not transcribed again), e.g. voice = {{name = "{turn.voice}"}}'
            )
        if turn.voice not in said and not (turn.voice_transcript and turn.voice_seconds):
            raise ScenarioError(
                f"{at}: voice {turn.voice!r} is said for the first time: give its seconds and transcript"
            )
        said.add(turn.voice)


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


def _parameters(at: str, value: Any) -> tuple[tuple[str, str], ...]:
    from cindy_site.parameters import NAMES

    if not isinstance(value, dict) or any(
        k not in NAMES or not isinstance(v, str | int) for k, v in value.items()
    ):
        raise ScenarioError(
            f'{at}: parameters is {value!r}: set one or more of {", ".join(NAMES)} ("" resets one), '
            'e.g. parameters = {CINDY_HISTORY_SIZE = "2"}'
        )
    return tuple((k, str(v)) for k, v in value.items())


def _check_parameters_reset(where: str, turns: tuple[Turn, ...]) -> None:
    """The stage is shared by the scenarios of a run: a parameter a scenario sets, it resets."""
    left: dict[str, int] = {}
    for turn in turns:
        for name, value in turn.parameters:
            if value:
                left[name] = turn.number
            else:
                left.pop(name, None)
    if left:
        name, number = next(iter(left.items()))
        raise ScenarioError(
            f"{where}: turn {number} sets the parameter {name} and no later turn resets it: add "
            f'parameters = {{{name} = ""}} to a later turn'
        )


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
