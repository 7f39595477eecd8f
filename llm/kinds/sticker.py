"""`sticker`: `{"kind": "sticker", "sticker_set": "SET", "name": "NAME", "reply_to": 123}` (`set` and
`sticker` are older names for its fields).

params: sticker_set ("" until planning fills in the agent's canonical set, for the legacy name-only
block), name, reply_to|None.
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import INTEGER, STRING, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import TaskError, message_id_of, required_text

#: Stands for "the agent's canonical sticker set" in a legacy sticker block that names only the
#: sticker. It is not a JSON value, so a JSON task can never ask for it; the task gets sticker_set ""
#: and planning (`llm.planning`) fills in the agent's first configured set.
CANONICAL_STICKER_SET = object()


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    """The set on the first line and the sticker on the second; the sticker alone means the agent's
    canonical set."""
    names = [line.strip() for line in body.splitlines() if line.strip()]
    if not names:
        raise TaskError("no sticker named: put the set on one line and the sticker on the next")
    if len(names) == 1:
        return {"sticker_set": CANONICAL_STICKER_SET, "name": names[0], "reply_to": number}
    return {"sticker_set": names[0], "name": names[1], "reply_to": number}


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    canonical = raw.get("sticker_set") is CANONICAL_STICKER_SET
    return {
        "sticker_set": "" if canonical else required_text(raw, "sticker_set", "set", notes=notes),
        "name": required_text(raw, "name", "sticker", notes=notes),
        "reply_to": message_id_of(raw, "reply_to", required=False),
    }


STICKER = register(
    TaskKind(
        name="sticker",
        validate=validate,
        policy=Ordinary(),
        runs="gateway",
        fields={"sticker_set": STRING, "name": STRING, "reply_to": INTEGER},
        conversational=True,
        read_legacy=read_legacy,
    )
)
