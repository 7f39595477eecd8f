"""The persona Markdown format: parse it into plain values, and write those values back.

A persona file is a list of level-1 sections (`# Heading` on its own line). Lines inside fenced code
blocks never start a section, so instructions may quote Markdown freely; `##` subheadings and `{user}`
templates are ordinary body text.

    # Agent Name
    Heidi

    # Agent Instructions
    You are Heidi ...

This module knows nothing about the database: `parse_persona` returns a `Persona`, `write_persona`
turns anything with the same attributes (a `Persona` or an `Agent`) back into text, and
`parse_persona(write_persona(p))` equals `p` field by field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agents.schedule import ScheduleError, parse_sleep_windows
from llm.routing import UnknownModelError, resolve

# Heading text -> attribute, in the order the writer emits them.
TEXT_FIELDS = {
    "Agent Name": "name",
    "Agent Phone": "phone",
    "Agent Timezone": "timezone",
    "LLM": "llm",
    "Telegram ID": "telegram_id",
    "Role Prompt": "role_prompt_names",
    "Agent Sticker Sets": "sticker_set_names",
    "Agent Stickers": "explicit_stickers",
    "Start Typing Delay": "start_typing_delay",
    "Typing Speed": "typing_speed",
    "Daily Schedule": "daily_schedule",
    "Agent Instructions": "instructions",
}
FLAG_FIELDS = {
    "Disabled": "disabled",
    "Gagged": "gagged",
    "Reset Context On First Message": "reset_context_on_first_message",
    "Clear Summaries On First Message": "clear_summaries_on_first_message",
}
REQUIRED = ("Agent Name", "Agent Phone", "Agent Instructions")
LIST_HEADINGS = ("Role Prompt", "Agent Sticker Sets", "Agent Stickers")
INT_RANGES: dict[str, tuple[int | None, int | None, str]] = {
    "Start Typing Delay": (1, 3600, "seconds, e.g. 2"),
    "Typing Speed": (1, 1000, "characters per second, e.g. 30"),
    "Telegram ID": (None, None, "the account's numeric user id, e.g. 123456789"),
}
PERSONA_FIELDS = (*TEXT_FIELDS.values(), *FLAG_FIELDS.values(), "extra_sections")

# Column sizes of the Agent model, checked here so that a long value is a clear error, not a DB error.
_MAX_LENGTH = {"Agent Name": 100, "Agent Phone": 32, "Agent Timezone": 64, "LLM": 100}
_KNOWN = {h.lower(): h for h in (*TEXT_FIELDS, *FLAG_FIELDS)}
_HEADING = re.compile(r"^#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_PHONE = re.compile(r"^\+?[0-9][0-9 ()\-.]{3,30}$")


class PersonaError(ValueError):
    """A persona file cannot be used. `errors` lists every problem found, each a full sentence."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


@dataclass
class Persona:
    name: str = ""
    phone: str = ""
    instructions: str = ""
    timezone: str = ""
    llm: str = ""
    role_prompt_names: list[str] = field(default_factory=list)
    sticker_set_names: list[str] = field(default_factory=list)
    explicit_stickers: list[str] = field(default_factory=list)
    daily_schedule: str = ""
    start_typing_delay: int | None = None
    typing_speed: int | None = None
    telegram_id: int | None = None
    disabled: bool = False
    gagged: bool = False
    reset_context_on_first_message: bool = False
    clear_summaries_on_first_message: bool = False
    extra_sections: list[list[str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list, compare=False)

    def values(self) -> dict:
        """The persona fields as a dict, ready for `Agent(**values)`."""
        return {name: getattr(self, name) for name in PERSONA_FIELDS}


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split Markdown into (preamble, [(heading, body), ...]) on level-1 headings outside code fences."""
    preamble, sections, _ = _walk(text)
    return _clean("\n".join(preamble)), [(h, _clean("\n".join(body))) for h, body in sections]


def _walk(text: str) -> tuple[list[str], list[tuple[str, list[str]]], str | None]:
    """Return (preamble lines, [(heading, body lines)], the fence still open at the end or None)."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in text.split("\n"):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        elif fence is None:
            heading = _HEADING.match(line)
            if heading:
                sections.append((heading.group(1), []))
                continue
        (sections[-1][1] if sections else preamble).append(line)
    return preamble, sections, fence


def _clean(body: str) -> str:
    """Drop blank lines around a body and trailing spaces at its end; keep everything in between."""
    lines = body.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines).rstrip()


def _lines(body: str) -> list[str]:
    return [line.strip() for line in body.split("\n") if line.strip()]


def parse_persona(text: str, *, source: str = "persona") -> Persona:
    """Parse persona Markdown; raise PersonaError listing every problem, each naming `source`.

    Steps: normalise line endings, split into sections, map known headings to fields (validating
    each), keep unknown headings in `extra_sections` with a warning, then check required fields.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    preamble, sections = split_sections(text)
    persona = Persona()
    errors: list[str] = []
    seen: set[str] = set()
    open_fence = _walk(text)[2]
    if open_fence:
        persona.warnings.append(
            f"{source}: a code block opened with {open_fence} never closes, so every heading after it is "
            f"read as text: add a closing {open_fence}"
        )
    if preamble:
        persona.warnings.append(
            f'{source}: text before the first heading is ignored ("{_short(preamble)}"): '
            'move it under a heading such as "# Agent Instructions"'
        )
    for raw_heading, body in sections:
        heading = _KNOWN.get(" ".join(raw_heading.split()).lower())
        if heading is None:
            persona.extra_sections.append([raw_heading, body])
            persona.warnings.append(
                f'{source}: unknown heading "{raw_heading}" is kept but not used: '
                f"check the spelling against {', '.join(_quoted(REQUIRED))} and the optional headings"
            )
            continue
        if heading in seen:
            errors.append(
                f'{source}: "{heading}" appears more than once: keep a single "# {heading}" section'
            )
            continue
        seen.add(heading)
        if heading in FLAG_FIELDS:
            setattr(persona, FLAG_FIELDS[heading], True)
            if body:
                persona.warnings.append(
                    f'{source}: "{heading}" is a presence-only flag; its text "{_short(body)}" is ignored: '
                    "leave the section empty"
                )
            continue
        error = _set_field(persona, heading, body, source)
        if error:
            errors.append(error)
    for heading in REQUIRED:
        if heading not in seen:
            errors.append(f'{source}: "{heading}" is missing: add a "# {heading}" section')
    if errors:
        raise PersonaError(errors)
    return persona


def _set_field(persona: Persona, heading: str, body: str, source: str) -> str | None:
    """Validate one known section and store it; return an error sentence or None."""
    attr = TEXT_FIELDS[heading]
    where = f'{source}: "{heading}"'
    if not body:
        if heading in REQUIRED:
            return f"{where} is empty: write the {_describe(heading)} under the heading"
        return None
    if heading in LIST_HEADINGS:
        values = _lines(body)
        if heading == "Agent Stickers":
            for value in values:
                set_name, sep, sticker = value.partition("::")
                if not sep or not set_name.strip() or not sticker.strip():
                    return f'{where} line is "{value}": write SET::NAME (e.g. WendyDancer::👋)'
            values = [_sticker_key(v) for v in values]
        setattr(persona, attr, values)
        return None
    if heading in INT_RANGES:
        low, high, example = INT_RANGES[heading]
        try:
            number = int(body.strip())
        except ValueError:
            return f'{where} is "{_short(body)}": not a whole number ({example})'
        if (low is not None and number < low) or (high is not None and number > high):
            return f'{where} is "{number}": out of range, use {low} to {high} ({example})'
        setattr(persona, attr, number)
        return None
    if heading == "Daily Schedule":
        try:
            parse_sleep_windows(body)
        except ScheduleError as exc:
            return f"{where}: {exc}"
    if heading in ("Agent Instructions", "Daily Schedule"):
        setattr(persona, attr, body)
        return None
    value = body.strip()
    if "\n" in value:
        return f'{where} is "{_short(value)}": spans several lines, write it on one line'
    limit = _MAX_LENGTH.get(heading)
    if limit and len(value) > limit:
        return f'{where} is "{_short(value)}": longer than {limit} characters, shorten it'
    if heading == "Agent Name" and ("/" in value or "\\" in value or value.startswith(".")):
        return f'{where} is "{value}": it names a folder, so it cannot contain / or \\ or start with a dot'
    if heading == "Agent Phone" and not _PHONE.match(value):
        return f'{where} is "{value}": not a phone number (international format, e.g. +15551234567)'
    if heading == "Agent Timezone":
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            return f'{where} is "{value}": not an IANA zone (e.g. Europe/Paris)'
    if heading == "LLM":
        try:
            resolve(value)
        except UnknownModelError as exc:
            return f"{source}: {exc}"
    setattr(persona, attr, value)
    return None


def _sticker_key(value: str) -> str:
    set_name, _, sticker = value.partition("::")
    return f"{set_name.strip()}::{sticker.strip()}"


def _describe(heading: str) -> str:
    return {"Agent Name": "persona's name", "Agent Phone": "account's phone number"}.get(
        heading, "persona's instructions"
    )


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _quoted(items) -> list[str]:
    return [f'"{item}"' for item in items]


def write_persona(persona) -> str:
    """Write persona values (a Persona or an Agent) in the Markdown format; instructions come last.

    Raises PersonaError when a value would not read back the same (a `# ` line outside a code block,
    or a code block left open), so an export never silently changes a persona.
    """
    who = getattr(persona, "name", "") or "persona"
    sections: list[tuple[str, str]] = []
    for heading, attr in TEXT_FIELDS.items():
        value = getattr(persona, attr)
        if heading == "Agent Instructions" or value is None or value == "" or value == []:
            continue
        sections.append((heading, "\n".join(value) if isinstance(value, list) else str(value)))
    sections += [(heading, "") for heading, attr in FLAG_FIELDS.items() if getattr(persona, attr)]
    sections += [(heading, body) for heading, body in persona.extra_sections or []]
    sections.append(("Agent Instructions", persona.instructions))
    errors = [problem for heading, body in sections if (problem := _body_problem(who, heading, body))]
    if errors:
        raise PersonaError(errors)
    return "\n".join(f"# {heading}\n\n{body}\n" if body else f"# {heading}\n" for heading, body in sections)


def _body_problem(who: str, heading: str, body: str) -> str | None:
    _, sections, fence = _walk(body)
    if sections:
        return (
            f'{who}: "{heading}" has the line "# {sections[0][0]}", which would start a new section: '
            "make it a subheading (## ...) or put it inside a code block"
        )
    if fence:
        return (
            f'{who}: "{heading}" opens a code block with {fence} and never closes it: add a closing {fence}'
        )
    return None
