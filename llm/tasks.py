"""Validation of the tasks a reply asks for: the dispatcher over the task kinds (`llm.kinds`).

LLM output is untrusted: every task is checked against its kind's rules (the kind's module). Anything
unknown or malformed becomes an error line instead of a task. Values that are usable once bounded are
bounded with a note (a negative or endless wait, an overlong message, a lone surrogate), and tasks that
mean nothing (a send without text) are dropped with a note: neither fails the turn.

Every task may carry an `id` (kept as text) and `depends_on` (ids of tasks it must wait for). The
stored kinds (`remember`, `plan`, ... see `memory.stored_kinds`) are validated by one shared rule
(`llm.kinds.stored`).
"""

from __future__ import annotations

from typing import Any

from llm.kinds import Task, kind_names, task_kind
from llm.kinds.retrieve import MAX_RETRIEVE_URLS
from llm.kinds.send import MAX_SEND_PARTS
from llm.kinds.sticker import CANONICAL_STICKER_SET
from llm.kinds.voice import MAX_VOICE_CHARACTERS
from llm.task_fields import (
    MAX_MESSAGE_ID,
    MAX_WAIT_SECONDS,
    TELEGRAM_MESSAGE_LIMIT,
    TaskError,
    check_url,
    depends_on_of,
    short_repr,
    task_id_of,
)

__all__ = [
    "CANONICAL_STICKER_SET",
    "MAX_MESSAGE_ID",
    "MAX_RETRIEVE_URLS",
    "MAX_SEND_PARTS",
    "MAX_VOICE_CHARACTERS",
    "MAX_WAIT_SECONDS",
    "TELEGRAM_MESSAGE_LIMIT",
    "Task",
    "TaskError",
    "check_url",
    "known_kinds",
    "validate_task",
    "validate_tasks",
]


def known_kinds() -> tuple[str, ...]:
    """Every kind a reply may use: the registered kinds, then the stored kinds (`llm.kinds`)."""
    return kind_names()


def validate_task(raw: Any, notes: list[str] | None = None) -> list[Task]:
    """One raw task object → its Tasks (none when dropped with a note, several for a split send).

    Raises TaskError saying what is wrong and how to fix it.
    """
    notes = notes if notes is not None else []
    if not isinstance(raw, dict):
        raise TaskError(f"a task must be an object with a kind, not {type(raw).__name__}")
    name = raw.get("kind")
    if not isinstance(name, str) or not name.strip():
        raise TaskError('the task has no "kind"')
    name = name.strip().lower()
    kind = task_kind(name)
    if kind is None:
        raise TaskError(f'kind "{short_repr(name)[1:-1]}" is unknown: use one of {", ".join(known_kinds())}')
    task_id, depends_on = task_id_of(raw), depends_on_of(raw)
    validated = kind.validate(raw, notes)
    # Only the first task of a split send keeps the reply's id and dependencies: the parts after it
    # run after it, under derived ids (`id#2`, ...) that cannot collide with the reply's own.
    return [
        Task(
            kind.name,
            params,
            id=task_id if index == 0 else (f"{task_id}#{index + 1}" if task_id else None),
            depends_on=depends_on if index == 0 else None,
        )
        for index, params in enumerate([validated] if isinstance(validated, dict) else validated)
    ]


def dedupe_by_id(raw_tasks: list[Any]) -> list[tuple[int, Any]]:
    """(position, task) of the tasks kept: the last task of each id wins, at the place of that last one.

    A reply revises a task by reusing its id; a `think` with the id of an earlier task cancels it.
    """
    ids = [_raw_id(raw) for raw in raw_tasks]
    last = {task_id: index for index, task_id in enumerate(ids) if task_id is not None}
    return [
        (index, raw)
        for index, (raw, task_id) in enumerate(zip(raw_tasks, ids, strict=True))
        if task_id is None or last[task_id] == index
    ]


def _raw_id(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    try:
        return task_id_of(raw)
    except TaskError:
        return None


def validate_tasks(raw_tasks: list[Any]) -> tuple[list[Task], list[str], list[str]]:
    """Dedupe by id, then validate each task. Returns (tasks in order, error lines, notes)."""
    tasks: list[Task] = []
    errors: list[str] = []
    notes: list[str] = []
    for index, raw in dedupe_by_id(raw_tasks):
        try:
            tasks.extend(validate_task(raw, notes))
        except TaskError as exc:
            kind = raw.get("kind") if isinstance(raw, dict) else None
            label = f" ({short_repr(kind)[1:-1]})" if isinstance(kind, str) else ""
            errors.append(f"task {index + 1}{label}: {exc}")
    return tasks, errors, notes
