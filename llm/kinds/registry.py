"""The task kinds, by name: the ones each module of `llm.kinds` registers, then the stored kinds.

Stored kinds are declared in `memory.stored_kinds`; each one is a task kind here with the shared
stored rule (`llm.kinds.stored`) unless a module registers its own declaration for it (an event's
time is checked, for instance). The order of `task_kinds()` is the order of the reply schema's kind
enum: registration order, then the stored kinds in their prompt order.
"""

from __future__ import annotations

from llm.kinds.base import TaskKind
from memory.stored_kinds import StoredKind, stored_kinds

_KINDS: dict[str, TaskKind] = {}
_STORED: dict[str, TaskKind] = {}  # the shared rule's declaration of each stored kind, made once


def register(kind: TaskKind) -> TaskKind:
    """Declare a task kind; a second declaration of the same name is a mistake and fails loudly."""
    if kind.name in _KINDS:
        raise RuntimeError(f"task kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Forget a kind registered by `register` (a test's own kind, once the test is done)."""
    _KINDS.pop(name, None)


def _stored(spec: StoredKind) -> TaskKind:
    from llm.kinds.stored import stored_task_kind

    return (
        _KINDS.get(spec.kind)
        or _STORED.get(spec.kind)
        or _STORED.setdefault(spec.kind, stored_task_kind(spec))
    )


def task_kinds() -> tuple[TaskKind, ...]:
    """Every kind a reply may use, in the canonical order."""
    stored = stored_kinds()
    names = {spec.kind for spec in stored}
    return tuple(kind for kind in _KINDS.values() if kind.name not in names) + tuple(map(_stored, stored))


def kind_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in task_kinds())


def aliases() -> dict[str, str]:
    """Older names -> the kind's name."""
    return {alias: kind.name for kind in task_kinds() for alias in kind.aliases}


def task_kind(name: str) -> TaskKind | None:
    """The kind called `name` (or one of its aliases), None when there is none."""
    name = aliases().get(name, name)
    return next((kind for kind in task_kinds() if kind.name == name), None)
