"""The task kinds, by name: the ones the modules of `llm.kinds` register, then the stored kinds.

Stored kinds are declared in `memory.stored_kinds`; each one is a task kind here with the shared
stored rule (`llm.kinds.stored`) unless a module registers its own declaration for it (an event's
time is checked, for instance). The order of `task_kinds()` is the order of the reply schema's kind
enum: the built-in kinds in `BUILT_IN` order, other registered kinds after them, then the stored kinds
in their prompt order.
"""

from __future__ import annotations

from importlib import import_module

from llm.kinds.base import TaskKind
from memory.stored_kinds import StoredKind, stored_kinds

#: The built-in kinds, each registered by the module of its name (`-` spelled `_`), loaded on the first
#: question to the registry. Their order is the reply schema's enum order, part of every request's
#: cached prefix whatever order the modules happen to be imported in: append new kinds, do not reorder.
#: The stored kinds named here are those whose module declares a rule of their own; they keep their
#: place among the stored kinds.
BUILT_IN = (
    "send",
    "sticker",
    "react",
    "wait",
    "block",
    "unblock",
    "think",
    "retrieve",
    "clear-conversation",
    "shutdown",
    "xsend",
    "send_media",
    "image",
    "voice",
    "remember",
    "plan",
    "event",
    "schedule",
    "recall",
)
_RANK = {name: index for index, name in enumerate(BUILT_IN)}

_KINDS: dict[str, TaskKind] = {}
_STORED: dict[str, TaskKind] = {}  # the shared rule's declaration of each stored kind, made once
_loaded = False


def register(kind: TaskKind) -> TaskKind:
    """Declare a task kind; a second declaration of the same name is a mistake and fails loudly."""
    if kind.name in _KINDS:
        raise RuntimeError(f"task kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Forget a kind registered by `register` (a test's own kind, once the test is done)."""
    _KINDS.pop(name, None)


def _load_built_ins() -> None:
    """Import every built-in kind's module (each registers its kind). Not at import time of this
    module: the kinds' modules import the policy and its models, which import this package."""
    global _loaded
    if not _loaded:
        for name in BUILT_IN:
            import_module(f"llm.kinds.{name.replace('-', '_')}")
        _loaded = True


def _stored(spec: StoredKind) -> TaskKind:
    from llm.kinds.stored import stored_task_kind

    return (
        _KINDS.get(spec.kind)
        or _STORED.get(spec.kind)
        or _STORED.setdefault(spec.kind, stored_task_kind(spec))
    )


def task_kinds() -> tuple[TaskKind, ...]:
    """Every kind a reply may use, in the canonical order."""
    _load_built_ins()
    stored = stored_kinds()
    names = {spec.kind for spec in stored}
    acting = sorted(
        (kind for kind in _KINDS.values() if kind.name not in names),
        key=lambda kind: _RANK.get(kind.name, len(_RANK)),
    )
    return tuple(acting) + tuple(map(_stored, stored))


def kind_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in task_kinds())


def aliases() -> dict[str, str]:
    """Older names -> the kind's name."""
    return {alias: kind.name for kind in task_kinds() for alias in kind.aliases}


def task_kind(name: str) -> TaskKind | None:
    """The kind called `name` (or one of its aliases), None when there is none."""
    name = aliases().get(name, name)
    return next((kind for kind in task_kinds() if kind.name == name), None)
