"""`send`: a text message, `{"kind": "send", "text": "...", "reply_to": 123}` (`message` is an older name
for `text`). A text over Telegram's limit becomes several messages (at most MAX_SEND_PARTS); a send
without text is dropped with a note.

params: text, reply_to|None (only the first part of a split send replies).
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import INTEGER, STRING, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import TELEGRAM_MESSAGE_LIMIT, TaskError, clean_text, message_id_of, split_message

#: At most this many parts of one send are kept, so its typing time stays sane; the rest is cut.
MAX_SEND_PARTS = 4


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    return {"text": body, "reply_to": number}


def validate(raw: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    value = raw.get("text", raw.get("message"))
    if value is not None and not isinstance(value, str):
        raise TaskError(f'"text" is {type(value).__name__}: it must be text')
    if not (value or "").strip():
        notes.append("a send task without text was dropped")
        return []
    text = clean_text(value, notes, '"text"')
    reply_to = message_id_of(raw, "reply_to", required=False)
    parts, left = [text], 0
    if len(text) > TELEGRAM_MESSAGE_LIMIT:
        parts, left = split_message(text, max_parts=MAX_SEND_PARTS)
    if len(parts) > 1:
        cut = f"; the last {left} characters were cut" if left else ""
        notes.append(
            f"a send of {len(text)} characters was split into {len(parts)} messages (Telegram allows "
            f"{TELEGRAM_MESSAGE_LIMIT} per message){cut}"
        )
    return [{"text": part, "reply_to": reply_to if index == 0 else None} for index, part in enumerate(parts)]


SEND = register(
    TaskKind(
        name="send",
        validate=validate,
        policy=Ordinary(),
        runs="gateway",
        fields={"text": STRING, "reply_to": INTEGER},
        conversational=True,
        read_legacy=read_legacy,
    )
)
