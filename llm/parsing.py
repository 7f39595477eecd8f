"""From the LLM's reply text to validated tasks.

The reply should be a JSON array of task objects. Models wrap it in code fences, add prose around it
or break the JSON slightly; all of that is tolerated. Broken JSON is repaired with `json_repair`. The
legacy Markdown task blocks (`# «send»`, `# «sticker» 123` + set line + name line, `# «retrieve»` +
URL lines, ...) are accepted too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import json_repair

from llm.tasks import Task, validate_tasks

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_LEGACY_HEADING = re.compile(r"^#\s*«\s*([A-Za-z-]+)\s*»[ \t]*(.*)$", re.MULTILINE)


@dataclass
class ParseResult:
    tasks: list[Task] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_reply(text: str) -> ParseResult:
    """Parse and validate a reply. An empty reply or `[]` means: do nothing."""
    raw_tasks, error = extract_raw_tasks(text or "")
    tasks, errors = validate_tasks(raw_tasks)
    if error:
        errors.insert(0, error)
    return ParseResult(tasks=tasks, errors=errors)


def extract_raw_tasks(text: str) -> tuple[list[Any], str]:
    """The raw task objects in `text`, and an error line when nothing usable was found."""
    stripped = text.strip()
    if not stripped:
        return [], ""
    if _LEGACY_HEADING.search(stripped) and not _looks_like_json(stripped):
        return parse_legacy_blocks(stripped), ""
    for candidate in _candidates(stripped):
        value = _loads(candidate)
        tasks = _as_task_list(value)
        if tasks is not None:
            return tasks, ""
    return [], f"the reply is not a JSON list of tasks: {_preview(stripped)}"


def _looks_like_json(text: str) -> bool:
    return text.lstrip("`json \n").startswith(("[", "{"))


def _candidates(text: str) -> list[str]:
    """Where the task list may be: the whole text, fenced blocks, then the span from the first bracket."""
    found = [text]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
    if start >= 0:
        end = max(text.rfind("]"), text.rfind("}"))
        if end > start:
            found.append(text[start : end + 1])
        found.append(text[start:])
    return found


def _loads(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    if not candidate.lstrip().startswith(("[", "{")):
        return None
    try:
        # json_repair fixes missing commas/quotes/brackets and trailing commas without inventing tasks.
        return json_repair.loads(candidate)
    except Exception:  # json_repair raises assorted errors on hopeless input
        return None


def _as_task_list(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        if all(isinstance(item, dict) for item in value) or not value:
            return value
        return value if any(isinstance(item, dict) and "kind" in item for item in value) else None
    if isinstance(value, dict):
        if isinstance(value.get("tasks"), list):
            return value["tasks"]
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
            task["name"] = lines[0]
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
