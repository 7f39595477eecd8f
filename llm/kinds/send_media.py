"""`send_media`: `{"kind": "send_media", "unique_id": "...", "reply_to": 123}` (`photo` is an older name
for the kind, `id` for `unique_id`), an item of the agent's own media library. Its policy is
`llm.policy_initiative`'s (not in a turn that read text from outside the chat: a web page, another
chat's intention; the item must be in that library).

params: unique_id, reply_to|None.
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import INTEGER, STRING, TaskKind
from llm.kinds.policies import Initiative
from llm.kinds.registry import register
from llm.task_fields import message_id_of, required_text


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {
        "unique_id": required_text(raw, "unique_id", "id", notes=notes).strip(),
        "reply_to": message_id_of(raw, "reply_to", required=False),
    }


SEND_MEDIA = register(
    TaskKind(
        name="send_media",
        validate=validate,
        policy=Initiative(),
        runs="gateway",
        fields={"unique_id": STRING, "reply_to": INTEGER},
        aliases=("photo",),
    )
)
