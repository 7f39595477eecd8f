"""`plan`: the agent's plans for one conversation, a stored kind (`memory.stored_kinds.PLAN`) with the
shared rule, declared here for its legacy Markdown block: the body is the plan."""

from __future__ import annotations

from typing import Any

from llm.kinds.registry import register
from llm.kinds.stored import stored_task_kind
from memory.stored_kinds import PLAN as STORED_PLAN


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    return {"content": body}


PLAN = register(stored_task_kind(STORED_PLAN, read_legacy=read_legacy))
