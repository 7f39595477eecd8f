"""`shutdown`: `{"kind": "shutdown"}` stops the agent; only operators may cause it. No params."""

from __future__ import annotations

from typing import Any

from llm.kinds.base import TaskKind, no_params
from llm.kinds.policies import OperatorOnly
from llm.kinds.registry import register


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    """The body, if any, is the reason given (shown in the reply's log, not used)."""
    return {"reason": body} if body else {}


SHUTDOWN = register(
    TaskKind(
        name="shutdown", validate=no_params, policy=OperatorOnly(), runs="gateway", read_legacy=read_legacy
    )
)
