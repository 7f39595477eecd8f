"""The persona Markdown format (`agents/<stem>.md`), read exactly as cw-telegram-agent reads it.

A persona file is a list of level-1 sections: a line `# Heading` (a single `#`, then spaces) starts a
section and the section's text runs to the next such line, stripped of surrounding whitespace.

    # Agent Name
    Heidi

    # Agent Instructions
    You are Heidi ...

The reading follows the original where it matters to an operator:
- heading names match exactly (case and spacing count; `# Agent Name #` is not "Agent Name");
- a `# ` line starts a section even inside a code block (warned about, since it is easy to miss);
- a heading that appears twice: the later section wins (warned);
- only "Agent Name", "Agent Phone" and "Agent Instructions" are required. An invalid optional value
  (a typing speed of `fast`, an unknown LLM, a malformed sticker line) is ignored with a warning that
  names the file, the heading, the value and the fix; the persona is still imported;
- `Start Typing Delay` and `Typing Speed` are numbers with a fraction (`3.5`, `8.0`);
- `none` and `null` in the single-value fields mean "not set";
- a flag section (`# Disabled`, `# Gagged`, ...) counts by its presence; any text under it is kept;
- `# Spend Limits` (Cindy's own; the original ignores it as an unknown heading) holds `Key: value`
  lines: `Daily Cap USD: 5`, `Turns Per Partner Per Minute: 3`, `Turns Per Partner Per Day: 200`;
- `# Voice` (Cindy's own too) holds `Voice: Kore` and `Language: en-GB` (`agents/persona_voice.py`);
- `# LLM Fallback` (Cindy's own too) lists LLM names, one per line, tried in order when the agent's
  LLM fails (`llm/failover.py`); a name `llm.routing` does not know is skipped with a warning.
- `# Recall Across Chats` (Cindy's own too) is `off` (the default) or `DMs`: with `DMs`, recall in a
  direct chat also finds the agent's other direct chats (docs/recall.md). Any other value is an error,
  not a warning: a misspelt privacy setting must not import as something else.

This module knows nothing about the database: `parse_persona` returns a `Persona`, `write_persona`
turns anything with the same attributes (a `Persona` or an `Agent`) back into text, and
`parse_persona(write_persona(p))` equals `p` field by field.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agents.persona_voice import VOICE_HEADING, VOICE_KEYS, set_voice, voice_text
from agents.schedule import ScheduleError, parse_sleep_windows
from cindy_site.llm_names import UnknownModelError, is_default_name, resolve
from cindy_site.money import USD_PLACES, usd, usd_places

# Heading text -> attribute, in the order the writer emits them.
TEXT_FIELDS = {
    "Agent Name": "name",
    "Agent Phone": "phone",
    "Agent Timezone": "timezone",
    "LLM": "llm",
    "LLM Fallback": "llm_fallback",
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
    "Answer Bots": "answer_bots",
}
#: The spend brakes' section (engine/brakes.py): line key -> attribute, in the order written.
SPEND_HEADING = "Spend Limits"
SPEND_KEYS = {
    "Daily Cap USD": "daily_spend_cap",
    "Turns Per Partner Per Minute": "partner_turns_per_minute",
    "Turns Per Partner Per Day": "partner_turns_per_day",
}
#: Cross-chat recall (docs/recall.md, Scopes): the value as written -> the stored value.
RECALL_HEADING = "Recall Across Chats"
RECALL_VALUES = {"off": "off", "DMs": "dms"}
SPEND_EXAMPLE = "Daily Cap USD: 5, Turns Per Partner Per Minute: 3 or Turns Per Partner Per Day: 200"
REQUIRED = ("Agent Name", "Agent Phone", "Agent Instructions")
LIST_HEADINGS = ("LLM Fallback", "Role Prompt", "Agent Sticker Sets", "Agent Stickers")
FLOAT_RANGES = {
    "Start Typing Delay": (1.0, 3600.0, "seconds before typing starts, e.g. 2 or 3.5"),
    "Typing Speed": (1.0, 1000.0, "characters per second, e.g. 30 or 8.0"),
}
TELEGRAM_ID_MAX = 2**63 - 1  # Telegram ids fit a signed 64-bit integer
PERSONA_FIELDS = (
    *TEXT_FIELDS.values(),
    *SPEND_KEYS.values(),
    *VOICE_KEYS.values(),
    *FLAG_FIELDS.values(),
    "recall_across_chats",
    "extra_sections",
    "flag_notes",
)
# A section is read into every prompt (instructions) or stored whole: 100,000 characters is about
# 25,000 tokens, already a large share of every request's context window and cost. Anything bigger is
# almost certainly a wrong file, and refusing it keeps one file from filling the database.
MAX_SECTION_CHARS = 100_000

# Column sizes of the Agent model, checked here so that a long value is a clear message, not a DB error.
_MAX_LENGTH = {"Agent Name": 100, "Agent Phone": 32, "Agent Timezone": 64, "LLM": 100}
_KNOWN = (*TEXT_FIELDS, SPEND_HEADING, VOICE_HEADING, RECALL_HEADING, *FLAG_FIELDS)
_HEADING = re.compile(r"^# +(.+?)$", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_PHONE = re.compile(r"^\+?[0-9][0-9 ()\-.]{3,30}$")


class PersonaError(ValueError):
    """A persona file cannot be used. `errors` lists every problem found, each a full sentence."""

    def __init__(self, errors: list[str], warnings: list[str] | None = None):
        self.errors = errors
        self.warnings = warnings or []  # found before the errors; reported with them
        super().__init__("; ".join(errors))


@dataclass
class Persona:
    name: str = ""
    phone: str = ""
    instructions: str = ""
    timezone: str = ""
    llm: str = ""
    llm_fallback: list[str] = field(default_factory=list)
    role_prompt_names: list[str] = field(default_factory=list)
    sticker_set_names: list[str] = field(default_factory=list)
    explicit_stickers: list[str] = field(default_factory=list)
    daily_schedule: str = ""
    start_typing_delay: float | None = None
    typing_speed: float | None = None
    telegram_id: int | None = None
    daily_spend_cap: Decimal | None = None
    partner_turns_per_minute: int | None = None
    partner_turns_per_day: int | None = None
    voice_name: str = ""
    voice_language: str = ""
    disabled: bool = False
    gagged: bool = False
    reset_context_on_first_message: bool = False
    clear_summaries_on_first_message: bool = False
    answer_bots: bool = False
    recall_across_chats: str = "off"
    extra_sections: list[list[str]] = field(default_factory=list)
    flag_notes: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list, compare=False)

    def values(self) -> dict:
        """The persona fields as a dict, ready for `Agent(**values)`."""
        return {name: getattr(self, name) for name in PERSONA_FIELDS}


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split Markdown into (preamble, [(heading, body), ...]) the way cw-telegram-agent does.

    Every line matching `# +TEXT` starts a section; heading and body are stripped of whitespace.
    """
    matches = list(_HEADING.finditer(text))
    if not matches:
        return text.strip(), []
    sections = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        sections.append((match.group(1).strip(), text[match.end() : end].strip()))
    return text[: matches[0].start()].strip(), sections


def _fenced_headings(text: str) -> list[str]:
    """Headings that sit inside a fenced code block (they still start a section, as in the original)."""
    fence: str | None = None
    found = []
    for line in text.split("\n"):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        elif fence is not None and _HEADING.match(line):
            found.append(line.strip())
    return found


def _lines(body: str) -> list[str]:
    return [line.strip() for line in body.split("\n") if line.strip()]


def parse_persona(text: str, *, source: str = "persona") -> Persona:
    """Parse persona Markdown; raise PersonaError listing every problem, each naming `source`.

    Steps: normalise line endings (and drop a byte-order mark), split into sections, let a later
    duplicate heading win, map known headings to fields (warning about and ignoring invalid optional
    values), keep unknown headings in `extra_sections`, then check the required fields.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    preamble, sections = split_sections(text)
    persona = Persona()
    warn = persona.warnings.append
    for line in _fenced_headings(text):
        warn(
            f'{source}: the line "{_short(line)}" is inside a code block but still starts a new section '
            "(cw-telegram-agent reads it the same way): make it a subheading (## ...) if it belongs to the "
            "section above"
        )
    if preamble:
        warn(
            f'{source}: text before the first heading is ignored ("{_short(preamble)}"): '
            'move it under a heading such as "# Agent Instructions"'
        )
    latest: dict[str, str] = {}
    for heading, body in sections:
        if heading in latest:
            warn(
                f'{source}: "# {heading}" appears more than once; the later section is used: '
                "keep a single section"
            )
        latest[heading] = body
    errors: list[str] = []
    for heading, body in latest.items():
        if heading in FLAG_FIELDS:
            setattr(persona, FLAG_FIELDS[heading], True)
            if body:
                persona.flag_notes[heading] = body
        elif heading == SPEND_HEADING:
            _set_spend_limits(persona, body, source)
        elif heading == VOICE_HEADING:
            set_voice(persona, body, source)
        elif heading == RECALL_HEADING:
            error = _set_recall_across_chats(persona, body, source)
            if error:
                errors.append(error)
        elif heading in TEXT_FIELDS:
            error = _set_field(persona, heading, body, source)
            if error:
                errors.append(error)
        else:
            persona.extra_sections.append([heading, body])
            warn(_unknown_heading(heading, source))
    for heading in REQUIRED:
        if heading not in latest:
            typo = next((h for h in persona.extra_sections if _closest_heading(h[0]) == heading), None)
            hint = f' (the file has "# {typo[0]}": did you mean "# {heading}"?)' if typo else ""
            errors.append(f'{source}: "{heading}" is missing{hint}: add a "# {heading}" section')
    if errors:
        raise PersonaError(errors, persona.warnings)
    return persona


def _unknown_heading(heading: str, source: str) -> str:
    near = " ".join(heading.rstrip("#").split()).lower()
    for known in _KNOWN:
        if known.lower() == near:
            return (
                f'{source}: heading "# {heading}" is not "# {known}" (headings must match exactly, '
                f'as in cw-telegram-agent); it is kept but not used: write "# {known}"'
            )
    close = _closest_heading(heading)
    if close:
        return (
            f'{source}: unknown heading "# {heading}": did you mean "# {close}"? It is kept (and written '
            f'back on export) but not used: write "# {close}"'
        )
    return (
        f'{source}: unknown heading "{heading}" is kept but not used: '
        f"check the spelling against {', '.join(_quoted(REQUIRED))} and the optional headings"
    )


def _closest_heading(heading: str) -> str | None:
    """The known heading `heading` is most likely a misspelling of (difflib's ratio of 0.8 or more)."""
    by_lower = {known.lower(): known for known in _KNOWN}
    close = difflib.get_close_matches(heading.lower(), by_lower, n=1, cutoff=0.8)
    return by_lower[close[0]] if close else None


def _set_spend_limits(persona: Persona, body: str, source: str) -> None:
    """Read the `Key: value` lines of "# Spend Limits"; a bad line is ignored with a warning."""
    for line in _lines(body):
        key, sep, raw = line.partition(":")
        key, raw = " ".join(key.split()), raw.strip()
        where = f'{source}: "{SPEND_HEADING}" line "{_short(line)}"'
        if not sep or key not in SPEND_KEYS:
            persona.warnings.append(f"{where} is not a known limit; ignored: write {SPEND_EXAMPLE}")
            continue
        if is_default_name(raw):
            continue
        attr = SPEND_KEYS[key]
        if attr == "daily_spend_cap":
            try:
                amount = Decimal(raw.removeprefix("$").removesuffix("USD").strip())
            except InvalidOperation:
                amount = None
            if amount is None or not amount.is_finite() or amount < 0 or amount >= Decimal("1e8"):
                persona.warnings.append(
                    f"{where}: not an amount of US dollars; ignored: write e.g. 5 or 0.50"
                )
                continue
            if usd_places(amount) > USD_PLACES:
                # Rounding would change the cap the operator wrote (0.0042 was once stored as 0.00).
                persona.warnings.append(
                    f"{where}: more than {USD_PLACES} decimal places; ignored: write e.g. 5 or 0.0042"
                )
                continue
            persona.daily_spend_cap = Decimal(usd(amount))
            continue
        if not raw.isdigit() or int(raw) < 1:
            persona.warnings.append(
                f"{where}: not a whole number of turns of at least 1; ignored: write e.g. 3"
            )
            continue
        setattr(persona, attr, int(raw))


def _set_recall_across_chats(persona: Persona, body: str, source: str) -> str | None:
    """Store "# Recall Across Chats" (case and spacing of the value do not count), or return the error."""
    by_lower = {written.lower(): stored for written, stored in RECALL_VALUES.items()}
    stored = by_lower.get(" ".join(body.split()).lower())
    if stored is None:
        return (
            f'{source}: "{RECALL_HEADING}" is "{_short(body)}", which is not an allowed value: '
            f"write {' or '.join(RECALL_VALUES)} (or leave the heading out: off)"
        )
    persona.recall_across_chats = stored
    return None


def _spend_limits_text(persona) -> str:
    lines = []
    for key, attr in SPEND_KEYS.items():
        value = getattr(persona, attr, None)
        if value is not None:
            lines.append(f"{key}: {usd(value)}" if attr == "daily_spend_cap" else f"{key}: {value}")
    return "\n".join(lines)


def _set_field(persona: Persona, heading: str, body: str, source: str) -> str | None:
    """Store one known section. Return an error sentence for a bad required field; warn otherwise."""
    attr = TEXT_FIELDS[heading]
    where = f'{source}: "{heading}"'
    if heading in REQUIRED:
        return _set_required(persona, heading, body, where)
    if len(body) > MAX_SECTION_CHARS:
        persona.warnings.append(
            f"{where} is {len(body):,} characters, more than the {MAX_SECTION_CHARS:,} allowed; "
            "ignored: shorten it"
        )
        return None
    if heading in LIST_HEADINGS:
        values = _lines(body)
        if heading == "Agent Stickers":
            values = _sticker_lines(persona, values, where)
        elif heading == "LLM Fallback":
            values = _fallback_lines(persona, values, where)
        setattr(persona, attr, values)
        return None
    if heading == "Daily Schedule":
        try:
            parse_sleep_windows(body)
        except ScheduleError as exc:
            persona.warnings.append(
                f"{where}: {exc}; the text is kept for the LLM but gives no sleep times: "
                "write Asleep: 22:30-07:15 to have the agent sleep"
            )
        persona.daily_schedule = body
        return None
    value = "" if is_default_name(body) else body
    if not value:
        return None
    problem = _optional_problem(persona, heading, value)
    if problem:
        persona.warnings.append(f'{where} is "{_short(value)}": {problem}')
    return None


def _optional_problem(persona: Persona, heading: str, value: str) -> str | None:
    """Store an optional single value, or return why it is ignored (with the fix)."""
    attr = TEXT_FIELDS[heading]
    if "\n" in value:
        return "spans several lines; ignored: write it on one line"
    limit = _MAX_LENGTH.get(heading)
    if limit and len(value) > limit:
        return f"longer than {limit} characters; ignored: shorten it"
    if heading in FLOAT_RANGES:
        low, high, example = FLOAT_RANGES[heading]
        try:
            number = float(value)
        except ValueError:
            return f"not a number; ignored: write {example}"
        if not math.isfinite(number) or not low <= number <= high:
            return f"outside {low:g} to {high:g}; ignored: write {example}"
        setattr(persona, attr, number)
        return None
    if heading == "Telegram ID":
        try:
            number = int(value)
        except ValueError:
            return "not a whole number; ignored: write the account's numeric user id, e.g. 123456789"
        if not 1 <= number <= TELEGRAM_ID_MAX:
            return (
                f"outside 1 to {TELEGRAM_ID_MAX} (Telegram ids fit 64 bits); ignored: "
                "write the account's numeric user id, e.g. 123456789"
            )
        persona.telegram_id = number
        return None
    if heading == "LLM":
        try:
            resolve(value)
        except UnknownModelError as exc:
            return f"{exc}; ignored, the agent uses DEFAULT_AGENT_LLM"
    setattr(persona, attr, value)
    if heading == "Agent Timezone":
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            return (
                "not an IANA zone; kept as written, but times use the site's TIME_ZONE until it is fixed: "
                "write a zone such as Europe/Paris or America/Los_Angeles"
            )
    return None


def _set_required(persona: Persona, heading: str, body: str, where: str) -> str | None:
    if not body:
        return f"{where} is empty: write the {_describe(heading)} under the heading"
    if heading == "Agent Instructions":
        if len(body) > MAX_SECTION_CHARS:
            return (
                f"{where} is {len(body):,} characters: at most {MAX_SECTION_CHARS:,} are accepted, since "
                "the instructions go into every LLM request: shorten them, or move reference material "
                "into agents/<name>/docs/ for the agent to retrieve"
            )
        persona.instructions = body
        return None
    if "\n" in body:
        return f'{where} is "{_short(body)}": spans several lines, write it on one line'
    bad = next((ch for ch in body if unicodedata.category(ch) == "Cc"), None)
    if bad is not None:
        return f"{where} contains the control character U+{ord(bad):04X}: remove it"
    limit = _MAX_LENGTH[heading]
    if len(body) > limit:
        return f'{where} is "{_short(body)}": longer than {limit} characters, shorten it'
    if heading == "Agent Phone" and not _PHONE.match(body):
        return f'{where} is "{body}": not a phone number (international format, e.g. +15551234567)'
    setattr(persona, TEXT_FIELDS[heading], body)
    return None


def _sticker_lines(persona: Persona, lines: list[str], where: str) -> list[str]:
    kept = []
    for line in lines:
        set_name, sep, sticker = line.partition("::")
        if sep and set_name.strip() and sticker.strip():
            kept.append(f"{set_name.strip()}::{sticker.strip()}")
        else:
            persona.warnings.append(
                f'{where} line "{_short(line)}" is not SET :: NAME; the line is skipped: '
                "write e.g. WendyDancer :: 👋"
            )
    return kept


def _fallback_lines(persona: Persona, lines: list[str], where: str) -> list[str]:
    """The fallback LLM names that resolve; a bad one is dropped with a warning naming it."""
    kept = []
    for line in lines:
        if is_default_name(line):
            persona.warnings.append(
                f'{where} line "{_short(line)}" names no LLM; the line is skipped: write one LLM name '
                "per line, e.g. gpt-5-mini"
            )
            continue
        try:
            resolve(line)
        except UnknownModelError as exc:
            persona.warnings.append(f'{where} line "{_short(line)}": {exc}; the line is skipped')
            continue
        if len(line) > _MAX_LENGTH["LLM"]:
            persona.warnings.append(
                f'{where} line "{_short(line)}" is longer than {_MAX_LENGTH["LLM"]} characters; '
                "the line is skipped: shorten it"
            )
            continue
        kept.append(line)
    return kept


def _describe(heading: str) -> str:
    return {"Agent Name": "persona's name", "Agent Phone": "account's phone number"}.get(
        heading, "persona's instructions"
    )


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _quoted(items) -> list[str]:
    return [f'"{item}"' for item in items]


def format_number(value: float | int) -> str:
    """`2.0` is written `2`, `3.5` as `3.5`: both read back as the same float."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_persona(persona) -> str:
    """Write persona values (a Persona or an Agent) in the Markdown format; instructions come last.

    Raises PersonaError when a value would not read back the same (a `# ` line inside a section), so
    an export never silently changes a persona.
    """
    who = getattr(persona, "name", "") or "persona"
    sections: list[tuple[str, str]] = []
    for heading, attr in TEXT_FIELDS.items():
        value = getattr(persona, attr)
        if heading == "Agent Instructions" or value is None or value == "" or value == []:
            continue
        if isinstance(value, list):
            text = "\n".join(value)
        elif isinstance(value, float):
            text = format_number(value)
        else:
            text = str(value)
        sections.append((heading, text))
    limits = _spend_limits_text(persona)
    if limits:
        sections.append((SPEND_HEADING, limits))
    voice = voice_text(persona)
    if voice:
        sections.append((VOICE_HEADING, voice))
    across = getattr(persona, "recall_across_chats", "off") or "off"
    if across != "off":
        sections.append((RECALL_HEADING, next(w for w, v in RECALL_VALUES.items() if v == across)))
    notes = getattr(persona, "flag_notes", None) or {}
    sections += [
        (heading, notes.get(heading, "")) for heading, attr in FLAG_FIELDS.items() if getattr(persona, attr)
    ]
    sections += [(heading, body) for heading, body in persona.extra_sections or []]
    sections.append(("Agent Instructions", persona.instructions))
    sections = [(heading, (body or "").strip()) for heading, body in sections]
    errors = [problem for heading, body in sections if (problem := _body_problem(who, heading, body))]
    if errors:
        raise PersonaError(errors)
    return "\n".join(f"# {heading}\n\n{body}\n" if body else f"# {heading}\n" for heading, body in sections)


def _body_problem(who: str, heading: str, body: str) -> str | None:
    match = _HEADING.search(body or "")
    if match:
        return (
            f'{who}: "{heading}" has the line "{match.group(0).strip()}", which would start a new section: '
            "make it a subheading (## ...)"
        )
    return None
