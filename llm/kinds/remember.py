"""`remember`: the agent's global memories, a stored kind (`memory.stored_kinds.REMEMBER`) with the
shared rule, declared here for its legacy Markdown block: the body, also from a ```` ```json ```` or
bare fence, is the memory; an empty block stores nothing, as in the original."""

from __future__ import annotations

from typing import Any

from llm.kinds.base import unfence
from llm.kinds.registry import register
from llm.kinds.stored import stored_task_kind
from memory.stored_kinds import REMEMBER as STORED_REMEMBER


def read_legacy(body: str, number: int | None) -> dict[str, Any] | None:
    content = unfence(body, "json", "").strip()
    return {"content": content} if content else None


REMEMBER = register(stored_task_kind(STORED_REMEMBER, read_legacy=read_legacy))
