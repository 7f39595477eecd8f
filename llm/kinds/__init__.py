"""Task kinds on the LLM side, one module per kind (`llm.kinds.base` says what a kind declares).

The registry (`llm.kinds.registry`) loads the built-in kinds' modules when it is first asked. A new
kind is one more module, its name in `BUILT_IN`, and its test; see "Adding a task kind" in
docs/llm.md.
"""

from __future__ import annotations

from llm.kinds.base import Policy, Task, TaskKind
from llm.kinds.registry import BUILT_IN, aliases, kind_names, register, task_kind, task_kinds, unregister

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
