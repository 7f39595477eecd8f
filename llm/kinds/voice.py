"""`voice`: `{"kind": "voice", "text": "...", "reply_to": 123}`, the text spoken (`llm.speech`) and sent
as a Telegram voice message: a send spoken, so it is as ordinary as a send. A voice task without text
is dropped with a note.

params: text, reply_to|None.
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import INTEGER, STRING, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import TaskError, clean_text, message_id_of

#: The longest text one voice note says (about two minutes of speech).
MAX_VOICE_CHARACTERS = 2000


def validate(raw: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    value = raw.get("text", raw.get("message"))
    if value is not None and not isinstance(value, str):
        raise TaskError(f'"text" is {type(value).__name__}: it must be the text to say')
    if not (value or "").strip():
        notes.append("a voice task without text was dropped")
        return []
    text = clean_text(value.strip(), notes, '"text"')
    if len(text) > MAX_VOICE_CHARACTERS:
        raise TaskError(
            f'"text" is {len(text)} characters: a voice note says at most {MAX_VOICE_CHARACTERS}; '
            "split it into several voice tasks or send the rest as text"
        )
    return [{"text": text, "reply_to": message_id_of(raw, "reply_to", required=False)}]


VOICE = register(
    TaskKind(
        name="voice",
        validate=validate,
        policy=Ordinary(),
        runs="gateway",
        fields={"text": STRING, "reply_to": INTEGER},
    )
)
