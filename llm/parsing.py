"""From the LLM's reply text to validated tasks.

The reply should be a JSON array of task objects. Models wrap it in code fences, add prose around it
or break the JSON slightly; all of that is tolerated. Broken JSON is repaired with `json_repair`. The
legacy Markdown task blocks (`# «send»`, `# «sticker» 123` + set line + name line, `# «retrieve»` +
URL lines, ...) are accepted too, including the oldest sticker block with only a name line (its set is
left empty here and filled in by planning with the agent's first configured sticker set).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import json_repair

from llm.tasks import CANONICAL_STICKER_SET, Task, validate_tasks

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_LEGACY_HEADING = re.compile(r"^#\s*«\s*([A-Za-z-]+)\s*»[ \t]*(.*)$", re.MULTILINE)


@dataclass
class ParseResult:
    tasks: list[Task] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # invalid tasks, never executed
    notes: list[str] = field(default_factory=list)  # tasks dropped or bounded, for the activity log


def parse_reply(text: str) -> ParseResult:
    """Parse and validate a reply. An empty reply or `[]` means: do nothing."""
    raw_tasks, error = extract_raw_tasks(text or "")
    tasks, errors, notes = validate_tasks(raw_tasks)
    if error:
        errors.insert(0, error)
    return ParseResult(tasks=tasks, errors=errors, notes=notes)


def extract_raw_tasks(text: str) -> tuple[list[Any], str]:
    """The raw task objects in `text`, and an error line when nothing usable was found.

    1. The whole text as JSON.
    2. Every `[` / `{` from the left, decoded exactly (`raw_decode`): the first value that is a task
       list or task object wins, joined with the task lists right after it (only whitespace, commas or
       code fences in between), so `[...][...]` keeps both and prose brackets before or after are skipped.
    3. Only then `json_repair`, on the most plausible span: it repairs broken JSON but, given two
       values, silently returns only the last.
    """
    stripped = text.strip()
    if not stripped:
        return [], ""
    if _LEGACY_HEADING.search(stripped) and not _looks_like_json(stripped):
        return parse_legacy_blocks(stripped), ""
    whole = _loads_exact(stripped)
    tasks = _as_task_list(whole)
    if tasks is not None:
        return tasks, ""
    scan = _scan(stripped)
    if scan.tasks is not None and scan.broken_start is not None and scan.broken_start < scan.start:
        # A task-looking span that does not decode came first: the value found may be one element of
        # that broken list. Keep whichever reading recovers more tasks.
        repaired = _repair(stripped[scan.broken_start :])
        if repaired is not None and len(repaired) > len(scan.tasks):
            return repaired, ""
    if scan.tasks is not None:
        return scan.tasks, ""
    spans = [stripped[scan.broken_start :]] if scan.broken_start is not None else []
    for candidate in spans + _candidates(stripped):
        tasks = _repair(candidate)
        if tasks is not None:
            return tasks, ""
    if scan.empty:
        return [], ""
    return [], f"the reply is not a JSON list of tasks: {_preview(stripped)}"


def _looks_like_json(text: str) -> bool:
    return text.lstrip("`json \n").startswith(("[", "{"))


_DECODER = json.JSONDecoder()
_START = re.compile(r"[\[{]")
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


def _scan(text: str) -> _Scan:
    scan = _Scan()
    for match in _START.finditer(text):
        position = match.start()
        try:
            value, end = _DECODER.raw_decode(text, position)
        except ValueError:
            if scan.broken_start is None and _TASK_LIKE.match(text, position):
                scan.broken_start = position
            continue
        if value == []:
            scan.empty = True
            continue
        tasks = _as_task_list(value, strict=True)
        if tasks is None:
            continue  # a value that is not a task list, e.g. {"response": [...]}: look inside it
        scan.tasks, scan.start = list(tasks), position
        scan.tasks += _following_tasks(text, end)
        return scan
    return scan


def _following_tasks(text: str, end: int) -> list[Any]:
    """Task lists that directly follow the one ending at `end` (a model that wrote two arrays)."""
    found: list[Any] = []
    while True:
        position = _BETWEEN.match(text, end).end()
        if position >= len(text) or text[position] not in "[{":
            return found
        try:
            value, end = _DECODER.raw_decode(text, position)
        except ValueError:
            return found
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
    except ValueError:
        return None


def _repair(candidate: str) -> list[Any] | None:
    """The task list in broken JSON, via json_repair, or None."""
    candidate = candidate.strip()
    if not candidate.startswith(("[", "{")):
        return None
    try:
        # json_repair fixes missing commas/quotes/brackets and trailing commas without inventing tasks.
        value = json_repair.loads(candidate)
    except Exception:  # json_repair raises assorted errors on hopeless input
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


def parse_legacy_blocks(text: str) -> list[dict[str, Any]]:
    """Legacy Markdown blocks → raw task dicts (validated afterwards like JSON tasks)."""
    headings = list(_LEGACY_HEADING.finditer(text))
    tasks: list[dict[str, Any]] = []
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(text)
        kind = heading.group(1).strip().lower()
        arg = heading.group(2).strip()
        body = text[heading.end() : end].strip("\n")
        tasks.append(_legacy_task(kind, arg, body))
    return tasks


def _legacy_task(kind: str, arg: str, body: str) -> dict[str, Any]:
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    task: dict[str, Any] = {"kind": kind}
    if kind == "send":
        task.update(text=body.strip(), reply_to=arg or None)
    elif kind == "sticker":
        task["reply_to"] = arg or None
        if len(lines) >= 2:
            task.update(sticker_set=lines[0], name=lines[1])
        elif lines:
            # The oldest form: only the sticker name; planning puts in the agent's first sticker set.
            task.update(sticker_set=CANONICAL_STICKER_SET, name=lines[0])
    elif kind == "retrieve":
        task["urls"] = [line for line in lines if line.startswith(("http://", "https://"))]
    elif kind == "react":
        task.update(message_id=arg or None, emoji=lines[0] if lines else "")
    elif kind == "wait":
        task["delay"] = arg or (lines[0] if lines else None)
    elif kind in ("remember", "plan"):
        task["content"] = body.strip()
    elif kind == "think":
        task["text"] = body.strip()
    return task
