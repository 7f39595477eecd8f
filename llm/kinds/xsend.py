"""`xsend`: `{"kind": "xsend", "target_channel_id": -100123, "intent": "..."}` (`channel_id` is an
older name), a turn in another of the agent's chats with this intention. Its policy is
`llm.policy_initiative`'s (not in a turn that read a web page or other text anybody could have written;
another conversation of the same agent, within the hop and hourly limits).

params: target_channel_id (a Telegram peer id), intent.
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import INTEGER, STRING, TaskKind
from llm.kinds.policies import Initiative
from llm.kinds.registry import register
from llm.task_fields import TaskError, optional_text, short_repr


def peer_id(raw: dict[str, Any], *names: str) -> int:
    """A Telegram peer id (users positive, chats and channels negative) from the first name given."""
    for name in names:
        value = raw.get(name)
        if value is None or value == "":
            continue
        text = str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
        if not text.lstrip("-").isdigit() or len(text) > 20 or int(text) == 0:
            raise TaskError(
                f'"{name}" is {short_repr(value)}: give the channel id shown in the conversation list'
            )
        return int(text)
    raise TaskError(f'"{names[0]}" is missing: give the id of the conversation to act in')


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    """`# «xsend» <target chat>` with the intention as the body."""
    return {"target_channel_id": number, "intent": body}


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {
        "target_channel_id": peer_id(raw, "target_channel_id", "channel_id"),
        "intent": optional_text(raw, "intent", notes).strip(),
    }


XSEND = register(
    TaskKind(
        name="xsend",
        validate=validate,
        policy=Initiative(),
        runs="gateway",
        fields={"target_channel_id": INTEGER, "intent": STRING},
        read_legacy=read_legacy,
    )
)
