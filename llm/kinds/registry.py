"""The task kinds, by name: the ones the modules of `llm.kinds` register, then the stored kinds.

Stored kinds are declared in `memory.stored_kinds`; each one is a task kind here with the shared
stored rule (`llm.kinds.stored`) unless a module registers its own declaration for it (an event's
time is checked, for instance). The order of `task_kinds()` is the order of the reply schema's kind
enum: the built-in kinds in `BUILT_IN` order, other registered kinds after them, then the stored kinds
in their prompt order.
"""

from __future__ import annotations

import operator
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
#: The last answer of `task_kinds`, its names and aliases, with what it was made from: the kinds
#: registered here (`_version`) and the stored kinds' declarations. A planning turn asks about 14
#: times (the schema, validation, policy); building the answer each time was about 0.1 ms of CPU a
#: question (bench/bench_inbound_profile.py).
_version = 0
_memo: (
    tuple[int, tuple[StoredKind, ...], tuple[TaskKind, ...], dict[str, str], dict[str, TaskKind]] | None
) = None


def register(kind: TaskKind) -> TaskKind:
    """Declare a task kind; a second declaration of the same name is a mistake and fails loudly."""
    if kind.name in _KINDS:
        raise RuntimeError(f"task kind {kind.name!r} is registered twice")
    global _version
    _KINDS[kind.name] = kind
    _version += 1
    return kind


def unregister(name: str) -> None:
    """Forget a kind registered by `register` (a test's own kind, once the test is done)."""
    global _version
    _KINDS.pop(name, None)
    _version += 1


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


def _known() -> tuple[tuple[TaskKind, ...], dict[str, str], dict[str, TaskKind]]:
    """(every kind in the canonical order, aliases -> names, every kind by name), made again only
    when a kind is registered or unregistered here or the stored kinds' declarations change."""
    global _memo
    _load_built_ins()
    stored = stored_kinds()
    if (
        _memo is not None
        and _memo[0] == _version
        and len(_memo[1]) == len(stored)
        and all(map(operator.is_, _memo[1], stored))
    ):
        return _memo[2:]
    names = {spec.kind for spec in stored}
    acting = sorted(
        (kind for kind in _KINDS.values() if kind.name not in names),
        key=lambda kind: _RANK.get(kind.name, len(_RANK)),
    )
    kinds = tuple(acting) + tuple(map(_stored, stored))
    aliased = {alias: kind.name for kind in kinds for alias in kind.aliases}
    by_name: dict[str, TaskKind] = {}
    for kind in kinds:
        by_name.setdefault(kind.name, kind)
    _memo = (_version, stored, kinds, aliased, by_name)
    return kinds, aliased, by_name


def task_kinds() -> tuple[TaskKind, ...]:
    """Every kind a reply may use, in the canonical order."""
    return _known()[0]


def kind_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in task_kinds())


def aliases() -> dict[str, str]:
    """Older names -> the kind's name (a copy: the caller may change it)."""
    return dict(_known()[1])


def task_kind(name: str) -> TaskKind | None:
    """The kind called `name` (or one of its aliases), None when there is none."""
    _, aliased, by_name = _known()
    return by_name.get(aliased.get(name, name))
