"""`wait`: `{"kind": "wait", "delay": 30}` (`seconds` is an older name for `delay`).

params: delay (seconds, 0 <= delay <= MAX_WAIT_SECONDS; outside that it is bounded with a note).
"""

from __future__ import annotations

import re
from typing import Any

from llm.kinds.base import NUMBER, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import TaskError, wait_delay

_DELAY = re.compile(r"delay:\s*(\d+)")


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    """A `delay: <seconds>` line, as the original requires."""
    delay = _DELAY.search(body)
    if delay is None:
        raise TaskError("no 'delay: <seconds>' line, e.g. delay: 10")
    return {"delay": int(delay.group(1)[:12])}


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
        read_legacy=read_legacy,
    )
)
