"""Task kinds on the LLM side, one module per kind (`llm.kinds.base` says what a kind declares).

Importing the package registers every built-in kind. A new kind is one more module named in
`BUILT_IN` and its test; see "Adding a task kind" in docs/llm.md.
"""

from __future__ import annotations

from importlib import import_module

from llm.kinds.base import Policy, Task, TaskKind
from llm.kinds.registry import aliases, kind_names, register, task_kind, task_kinds, unregister

#: The modules that register the built-in kinds. Their order is the order of the reply schema's kind
#: enum (the stored kinds follow, in their prompt order), which is part of every request's cached
#: prefix: append new kinds, do not reorder.
BUILT_IN = (
    "send",
    "sticker",
    "react",
    "wait",
    "block",
    "unblock",
    "think",
    "retrieve",
    "clear_conversation",
    "shutdown",
    "xsend",
    "send_media",
    "image",
    "voice",
    # Stored kinds declared for a rule of their own; the enum puts them with the other stored kinds.
    "remember",
    "plan",
    "event",
    "schedule",
)
for _module in BUILT_IN:
    import_module(f"llm.kinds.{_module}")

__all__ = [
    "BUILT_IN",
    "Policy",
    "Task",
    "TaskKind",
    "aliases",
    "kind_names",
    "register",
    "task_kind",
    "task_kinds",
    "unregister",
]
