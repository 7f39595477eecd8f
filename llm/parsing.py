"""From the LLM's reply text to validated tasks.

The reply should be a JSON array of task objects. Models wrap it in code fences, add prose around it
or break the JSON slightly; all of that is tolerated. Broken JSON is repaired with `json_repair`. The
legacy Markdown task blocks (`# «send»`, ...) are read as the original system read them
(`llm.legacy_markdown`). Text that is neither is never sent to anybody: a reply of plain prose, or one
cut off inside a text (`[{"kind":"send","text":"half`), yields an error line on the node instead.
One turn sends at most CINDY_MAX_TURN_TEXT_CHARS characters; the rest is dropped with a note.

Replies are untrusted and may be hostile, so the work per reply is bounded: a reply larger than
MAX_REPLY_CHARS is refused; the decoder's RecursionError on deep nesting is caught like any decode
error; the exact scan stops after decoding SCAN_BUDGET_FACTOR characters per character of the reply
(a failed deep decode counts as RECURSION_COST); json_repair, whose cost grows faster than the size
and which recurses per level, only sees spans up to MAX_REPAIR_CHARS nested at most MAX_NESTING deep.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import json_repair
from django.conf import settings

from llm.legacy_markdown import has_task_heading, is_legacy, parse_legacy
from llm.tasks import Task, validate_tasks

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)

#: Replies larger than this are refused (a model's reply is far smaller; a 2,000,000-character send
#: still parses, and is split and cut by validation).
MAX_REPLY_CHARS = 4_000_000
#: Task JSON nests 3 deep; spans nested deeper than this are not given to json_repair.
MAX_NESTING = 64
#: At most this many places are decoded per reply (a task list comes within the first few).
MAX_SCAN_ATTEMPTS = 200
#: The first window of text given to the decoder at a place (grown when a value goes on past it).
DECODE_WINDOW = 256
#: What a decode that ended in RecursionError counts against the scan budget (about the recursion limit).
RECURSION_COST = 1000
#: json_repair is only tried on spans up to this size (its cost grows faster than the size)...
MAX_REPAIR_CHARS = 8_000
#: ... and on at most this many characters in all, per reply.
MAX_REPAIR_TOTAL = 12_000
#: Tasks after this many in one reply are dropped with an error line.
MAX_TASKS = 500
#: The exact scan decodes at most this many characters per character of the reply.
SCAN_BUDGET_FACTOR = 2


@dataclass
class ParseResult:
    tasks: list[Task] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # invalid tasks, never executed
    notes: list[str] = field(default_factory=list)  # tasks dropped or bounded, for the activity log


def parse_reply(text: str) -> ParseResult:
    """Parse and validate a reply. An empty reply or `[]` means: do nothing."""
    raw_tasks, error = extract_raw_tasks(text or "")
    legacy_errors: list[str] = []
    if isinstance(raw_tasks, _Legacy):
        raw_tasks, legacy_errors = raw_tasks.tasks, raw_tasks.errors
    too_many = []
    if len(raw_tasks) > MAX_TASKS:
        too_many = [f"the reply has {len(raw_tasks)} tasks: only the first {MAX_TASKS} are used"]
        raw_tasks = raw_tasks[:MAX_TASKS]
    tasks, errors, notes = validate_tasks(raw_tasks)
    tasks, bounded = _bound_turn_text(tasks, settings.CINDY_MAX_TURN_TEXT_CHARS)
    notes += bounded
    errors = legacy_errors + too_many + errors
    if error:
        errors.insert(0, error)
    return ParseResult(tasks=tasks, errors=errors, notes=notes)


#: The kinds whose `text` goes to a person.
_SENDING_KINDS = ("send", "xsend")


def _bound_turn_text(tasks: list[Task], limit: int) -> tuple[list[Task], list[str]]:
    """The tasks with at most `limit` characters of text to send in all: the send that reaches the
    limit is cut there, later sends are dropped (other kinds are kept), and a note says how much."""
    total = sum(len(t.params.get("text") or "") for t in tasks if t.kind in _SENDING_KINDS)
    if total <= limit:
        return tasks, []
    kept: list[Task] = []
    left = limit
    for task in tasks:
        text = task.params.get("text") or "" if task.kind in _SENDING_KINDS else None
        if text is None:
            kept.append(task)
        elif left > 0:
            if len(text) > left:
                task = replace(task, params={**task.params, "text": text[:left]})
            kept.append(task)
            left -= len(task.params["text"])
    return kept, [
        f"the reply's sends hold {total:,} characters: {limit:,} were kept and {total - limit:,} dropped "
        "(CINDY_MAX_TURN_TEXT_CHARS)"
    ]


@dataclass
class _Legacy:
    tasks: list[Any]
    errors: list[str]


def extract_raw_tasks(text: str) -> tuple[list[Any] | _Legacy, str]:
    """The raw task objects in `text`, and an error line when nothing usable was found.

    1. Refuse an oversized reply (`reply_shape_error`).
    2. A reply starting with `# ` is legacy Markdown task blocks.
    3. The whole text as JSON.
    4. Every `[` / `{` from the left, decoded exactly (`raw_decode`): the first value that is a task
       list or task object wins, joined with the task lists right after it (only whitespace, commas or
       code fences in between), so `[...][...]` keeps both and prose brackets before or after are skipped.
    5. Only then `json_repair`, on the most plausible span: it repairs broken JSON but, given two
       values, silently returns only the last.
    6. Text that holds no task JSON and does not look like JSON is one `send` of that text, as the
       original read a reply without task headings; text that looks like broken JSON is an error.
    """
    stripped = text.strip()
    if not stripped:
        return [], ""
    shape_error = reply_shape_error(stripped)
    if shape_error:
        return [], shape_error
    if is_legacy(stripped):
        return _Legacy(*parse_legacy(stripped)), ""
    if _looks_like_json(stripped) and nesting_depth(stripped[:MAX_REPAIR_CHARS]) > MAX_NESTING:
        return [], f"the reply nests brackets more than {MAX_NESTING} deep: not a task list; nothing was sent"
    whole = _loads_exact(stripped)
    tasks = _as_task_list(whole)
    if tasks is not None:
        return tasks, ""
    scan = _scan(stripped)
    repair = _Repairer()
    if scan.tasks is not None and scan.broken_start is not None and scan.broken_start < scan.start:
        # A task-looking span that does not decode came first: the value found may be one element of
        # that broken list. Keep whichever reading recovers more tasks.
        repaired = repair(stripped[scan.broken_start :])
        if repaired is not None and len(repaired) > len(scan.tasks):
            return repaired, ""
    if scan.tasks is not None:
        return scan.tasks, _CUT_OFF if repair.cut_off else ""
    spans = [stripped[scan.broken_start :]] if scan.broken_start is not None else []
    for candidate in dict.fromkeys(spans + _candidates(stripped)):
        tasks = repair(candidate)
        if tasks is not None:
            return tasks, _CUT_OFF if repair.cut_off else ""
    if repair.cut_off:
        return [], _CUT_OFF
    if scan.empty:
        return [], ""
    if _looks_like_json(stripped) or scan.broken_start is not None or scan.exhausted:
        return [], f"the reply is not a JSON list of tasks: {_preview(stripped)}"
    if has_task_heading(stripped):
        return _Legacy(*parse_legacy(stripped)), ""
    return [], (
        "the reply holds no task (neither a JSON list of tasks nor `# «kind»` blocks); nothing was sent: "
        f"{_preview(stripped)}"
    )


_CUT_OFF = (
    "the reply was cut off inside a text (a string that never ends): nothing of that task was sent, "
    "only the complete tasks before it"
)


def _ends_inside_string(text: str) -> bool:
    """Whether `text` ends within a JSON string (an opening quote never closed)."""
    inside = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif inside and char == "\\":
            escaped = True
        elif char == '"':
            inside = not inside
    return inside


def reply_shape_error(text: str) -> str:
    """An error line when `text` is too large to be a reply, else ""."""
    if len(text) > MAX_REPLY_CHARS:
        return f"the reply has {len(text)} characters: more than {MAX_REPLY_CHARS} cannot be a task list"
    return ""


def nesting_depth(text: str, *, limit: int = MAX_NESTING) -> int:
    """How deep brackets nest in `text` (JSON strings skipped), counting at most to `limit` + 1.

    A Python loop over the brackets: used only on spans up to MAX_REPAIR_CHARS.
    """
    depth = deepest = 0
    for token in _BRACKETS.findall(text):
        if token == "[" or token == "{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif depth and (token == "]" or token == "}"):
            depth -= 1
    return deepest


#: JSON strings (skipped whole; escapes are not followed, so no match can go quadratic) and brackets.
_BRACKETS = re.compile(r'"[^"\n]*"|[\[\]{}]')


def _looks_like_json(text: str) -> bool:
    return text.lstrip("`json \n").startswith(("[", "{"))


_DECODER = json.JSONDecoder()
#: Where a task list or task object may start: `[` before `{` or `]`, or `{` before a key. The tight
#: forms are found with str.find (fast on any text); the spaced forms by a regex, only when present.
_TIGHT_STARTS = ("[{", "[]", '{"')
_SPACED_START = re.compile(r'\[\s+[{\]]|\{\s+"')
_SPACED_HINTS = ("[ ", "[\n", "{ ", "{\n")


def _starts(text: str) -> Iterator[int]:
    """Every place a task list or task object may start, in order (lazily)."""

    def tight(token: str) -> Iterator[int]:
        position = text.find(token)
        while position >= 0:
            yield position
            position = text.find(token, position + 1)

    sources = [tight(token) for token in _TIGHT_STARTS]
    if any(hint in text for hint in _SPACED_HINTS):
        sources.append(match.start() for match in _SPACED_START.finditer(text))
    return heapq.merge(*sources)


#: What may stand between two task lists that belong together: whitespace, commas, code fences.
_BETWEEN = re.compile(r"(?:\s|,|```[a-zA-Z0-9_-]*)*")
#: A span that is meant to be task JSON even when it does not decode: `[{` or `{"kind"` / `{"tasks"`.
_TASK_LIKE = re.compile(r'\[\s*\{|\{\s*"(?:kind|tasks)"')


@dataclass
class _Scan:
    tasks: list[Any] | None = None  # the joined task lists, None when no value was a task list
    start: int = -1  # where the first of them starts
    broken_start: int | None = None  # the first task-looking span that did not decode
    empty: bool = False  # an exact `[]` was seen: "nothing to do"
    attempts: int = 0  # decodes tried
    decoded: int = 0  # characters handed to the decoder, across all attempts
    exhausted: bool = False  # the scan stopped at its budget


def _scan(text: str) -> _Scan:
    """Decode at each place a task list could start, within the scan budget."""
    scan = _Scan()
    budget = SCAN_BUDGET_FACTOR * len(text) + 10_000
    for position in _starts(text):
        if scan.attempts >= MAX_SCAN_ATTEMPTS or scan.decoded > budget:
            scan.exhausted = True
            return scan
        scan.attempts += 1
        decoded = _decode_at(text, position, scan)
        if decoded is None:
            if scan.broken_start is None and _TASK_LIKE.match(text, position):
                scan.broken_start = position
            continue
        value, end = decoded
        if value == []:
            scan.empty = True
            continue
        tasks = _as_task_list(value, strict=True)
        if tasks is None:
            continue  # a value that is not a task list, e.g. {"response": [...]}: look inside it
        scan.tasks, scan.start = list(tasks), position
        scan.tasks += _following_tasks(text, end, scan)
        return scan
    return scan


def _decode_at(text: str, position: int, scan: _Scan) -> tuple[Any, int] | None:
    """The JSON value starting at `position` and where it ends, or None.

    The decoder is given a window of the text, grown 8-fold while the error is at the window's end
    (the value may go on): a decode error in a full-length text costs time in proportion to its
    position (JSONDecodeError counts the lines before it), which would make scanning quadratic. A
    window already nested deeper than MAX_NESTING is not grown.
    """
    window = DECODE_WINDOW
    while True:
        chunk = text[position : position + window]
        truncated = position + window < len(text)
        scan.decoded += len(chunk)
        try:
            value, end = _DECODER.raw_decode(chunk)
        except RecursionError:
            scan.decoded += RECURSION_COST
            return None
        except json.JSONDecodeError as exc:
            at_end = exc.pos >= len(chunk) - 16 or exc.msg.startswith("Unterminated string")
            if truncated and at_end and scan.decoded <= SCAN_BUDGET_FACTOR * len(text) + 10_000:
                if nesting_depth(chunk) > MAX_NESTING:
                    return None  # nested too deep to be a task list: not worth a larger window
                window *= 8
                continue
            return None
        except ValueError:  # e.g. an integer literal longer than Python's 4,300-digit limit
            return None
        return value, position + end


def _following_tasks(text: str, end: int, scan: _Scan) -> list[Any]:
    """Task lists that directly follow the one ending at `end` (a model that wrote two arrays)."""
    found: list[Any] = []
    while True:
        position = _BETWEEN.match(text, end).end()
        if position >= len(text) or text[position] not in "[{":
            return found
        decoded = _decode_at(text, position, scan)
        if decoded is None:
            return found
        value, end = decoded
        tasks = _as_task_list(value, strict=True)
        if tasks is None:
            return found
        found += tasks


def _candidates(text: str) -> list[str]:
    """Where broken task JSON may be: the whole text, fenced blocks, then the span from the first bracket."""
    found = [text]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start >= 0:
        end = max(text.rfind("]"), text.rfind("}"))
        if end > start:
            found.append(text[start : end + 1])
        found.append(text[start:])
    return found


def _loads_exact(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):
        return None


class _Repairer:
    """json_repair within the per-reply budget: spans up to MAX_REPAIR_CHARS, MAX_REPAIR_TOTAL in all."""

    def __init__(self) -> None:
        self.left = MAX_REPAIR_TOTAL
        self.attempts = 0
        self.cut_off = False  # a span ended inside a string: its last text is partial, never repaired

    def __call__(self, candidate: str) -> list[Any] | None:
        """The task list in broken JSON, via json_repair, or None."""
        candidate = candidate.strip()
        if not candidate.startswith(("[", "{")) or len(candidate) > min(MAX_REPAIR_CHARS, self.left):
            return None
        if nesting_depth(candidate) > MAX_NESTING:
            return None
        if _ends_inside_string(candidate):
            # json_repair would close the string and send the half a model wrote before it stopped.
            self.cut_off = True
            return None
        self.left -= len(candidate)
        self.attempts += 1
        try:
            # json_repair fixes missing commas/quotes/brackets and trailing commas without inventing tasks.
            value = json_repair.loads(candidate)
        except Exception:  # json_repair raises assorted errors (RecursionError too) on hopeless input
            return None
        return _as_task_list(value)


def _as_task_list(value: Any, *, strict: bool = False) -> list[Any] | None:
    """`value` as a list of raw tasks, or None when it is not one.

    Strict (for values found inside prose): every item an object and at least one with a "kind", so
    a stray `[1]` or `{"a": 1}` in a sentence is not taken for tasks.
    """
    if isinstance(value, list):
        if strict:
            ok = bool(value) and all(isinstance(item, dict) for item in value)
            return value if ok and any("kind" in item for item in value) else None
        if all(isinstance(item, dict) for item in value) or not value:
            return value
        return value if any(isinstance(item, dict) and "kind" in item for item in value) else None
    if isinstance(value, dict):
        if isinstance(value.get("tasks"), list):
            return _as_task_list(value["tasks"], strict=strict) if strict else value["tasks"]
        if "kind" in value:
            return [value]
    return None


def _preview(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
