"""`think`: `{"kind": "think", "text": "..."}`, private reasoning. Planning drops it after logging its
text; a think with the id of an earlier task cancels that task (`llm.tasks.dedupe_by_id`).

params: text ("" when it is not text).
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import STRING, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    return {"text": body}


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {"text": raw.get("text") if isinstance(raw.get("text"), str) else ""}


THINK = register(
    TaskKind(
        name="think",
        validate=validate,
        policy=Ordinary(in_schedule_turn=True),
        runs="planning",
        fields={"text": STRING},
        conversational=True,
        read_legacy=read_legacy,
    )
)
