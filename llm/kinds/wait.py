"""`wait`: `{"kind": "wait", "delay": 30}` (`seconds` is an older name for `delay`).

params: delay (seconds, 0 <= delay <= MAX_WAIT_SECONDS; outside that it is bounded with a note).
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import NUMBER, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import wait_delay


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {"delay": wait_delay(raw, notes)}


WAIT = register(
    TaskKind(
        name="wait",
        validate=validate,
        policy=Ordinary(),
        runs="gateway",
        fields={"delay": NUMBER},
        conversational=True,
    )
)
