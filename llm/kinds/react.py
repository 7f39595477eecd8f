"""`react`: `{"kind": "react", "emoji": "👍", "message_id": 123}` (`reply_to` is an older name for
`message_id`). Only Telegram's standard reactions are allowed.

params: emoji (in Telegram's spelling), message_id.
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import INTEGER, STRING, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import TaskError, message_id_of, short_repr

#: Telegram's standard reaction emoji (messages.getAvailableReactions), without variation selectors.
TELEGRAM_REACTIONS = frozenset(
    "👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 "
    "🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 "
    "🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡".split()
)


def normalize_reaction(emoji: str) -> str | None:
    """The emoji in Telegram's spelling if it is an allowed reaction, else None."""
    cleaned = (emoji or "").strip().replace("\ufe0f", "")
    return cleaned if cleaned in TELEGRAM_REACTIONS else None


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    """`# «react» <message id>` with the emoji on the body's first line."""
    return {"message_id": number, "emoji": body.splitlines()[0].strip() if body else ""}


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    emoji = raw.get("emoji")
    normalized = normalize_reaction(emoji) if isinstance(emoji, str) else None
    if normalized is None:
        raise TaskError(f'"emoji" is {short_repr(emoji)}: not one of Telegram\'s reactions (e.g. 👍 ❤ 😁 🔥)')
    return {"emoji": normalized, "message_id": message_id_of(raw, "message_id", "reply_to", required=True)}


REACT = register(
    TaskKind(
        name="react",
        validate=validate,
        policy=Ordinary(),
        runs="gateway",
        fields={"emoji": STRING, "message_id": INTEGER},
        conversational=True,
        read_legacy=read_legacy,
    )
)
