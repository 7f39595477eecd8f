"""Task kinds the LLM may ask for, their validation, and the JSON schema the reply must follow.

LLM output is untrusted: every task is checked against its kind's rules here, and anything unknown or
malformed becomes an error message instead of a task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

KINDS = (
    "send",
    "sticker",
    "react",
    "wait",
    "block",
    "unblock",
    "remember",
    "plan",
    "think",
    "retrieve",
    "clear-conversation",
    "shutdown",
)
MAX_RETRIEVE_URLS = 3

#: Stands for "the agent's canonical sticker set" in a legacy sticker block that names only the
#: sticker. It is not a JSON value, so a JSON task can never ask for it; the task gets sticker_set ""
#: and planning (`llm.planning`) fills in the agent's first configured set.
CANONICAL_STICKER_SET = object()

#: Telegram's standard reaction emoji (messages.getAvailableReactions), without variation selectors.
TELEGRAM_REACTIONS = frozenset(
    "👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 "
    "🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 "
    "🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡".split()
)


@dataclass
class Task:
    """A validated task. params per kind:

    send: text, reply_to|None; sticker: sticker_set ("" until planning fills in the agent's canonical
    set, for the legacy name-only block), name, reply_to|None; react: emoji, message_id;
    wait: delay (seconds, float >= 0); remember / plan: content; think: text; retrieve: urls;
    block, unblock, clear-conversation, shutdown: {}.
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)


class TaskError(ValueError):
    pass


def normalize_reaction(emoji: str) -> str | None:
    """The emoji in Telegram's spelling if it is an allowed reaction, else None."""
    cleaned = (emoji or "").strip().replace("\ufe0f", "")
    return cleaned if cleaned in TELEGRAM_REACTIONS else None


def _id(raw: dict[str, Any], *names: str, required: bool) -> int | None:
    for name in names:
        value = raw.get(name)
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            raise TaskError(f'"{name}" is {value!r}: it must be a message id (a number)')
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        raise TaskError(f'"{name}" is {value!r}: it must be a message id (a number)')
    if required:
        raise TaskError(f'"{names[0]}" is missing: give the message id')
    return None


def _text(raw: dict[str, Any], *names: str) -> str:
    for name in names:
        value = raw.get(name)
        if isinstance(value, str) and value.strip():
            return value
        if value is not None and not isinstance(value, str):
            raise TaskError(f'"{name}" is {type(value).__name__}: it must be text')
    raise TaskError(f'"{names[0]}" is missing or empty')


def _delay(raw: dict[str, Any]) -> float:
    value = raw.get("delay", raw.get("seconds"))
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise TaskError(f'"delay" is {value!r}: it must be a number of seconds') from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TaskError(f'"delay" is {value!r}: it must be a number of seconds')
    if not math.isfinite(value) or value < 0:
        raise TaskError(f'"delay" is {value!r}: it must be 0 or more seconds')
    return float(value)


def _urls(raw: dict[str, Any]) -> list[str]:
    value = raw.get("urls", raw.get("url"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise TaskError('"urls" is missing: give a list of 1 to 3 http(s) URLs')
    if len(value) > MAX_RETRIEVE_URLS:
        raise TaskError(f'"urls" has {len(value)} URLs: at most {MAX_RETRIEVE_URLS} per retrieve task')
    urls = []
    for url in value:
        parts = urlsplit(url.strip()) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise TaskError(f"URL {url!r} is not an http(s) URL")
        urls.append(url.strip())
    return urls


def validate_task(raw: Any) -> Task:
    """One raw task object → a Task, or TaskError saying what is wrong and how to fix it."""
    if not isinstance(raw, dict):
        raise TaskError(f"a task must be an object with a kind, not {type(raw).__name__}")
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind.strip():
        raise TaskError('the task has no "kind"')
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise TaskError(f'kind "{kind}" is unknown: use one of {", ".join(KINDS)}')
    if kind == "send":
        params = {"text": _text(raw, "text", "message"), "reply_to": _id(raw, "reply_to", required=False)}
    elif kind == "sticker":
        canonical = raw.get("sticker_set") is CANONICAL_STICKER_SET
        params = {
            "sticker_set": "" if canonical else _text(raw, "sticker_set", "set"),
            "name": _text(raw, "name", "sticker"),
            "reply_to": _id(raw, "reply_to", required=False),
        }
    elif kind == "react":
        emoji = raw.get("emoji")
        normalized = normalize_reaction(emoji) if isinstance(emoji, str) else None
        if normalized is None:
            raise TaskError(f'"emoji" is {emoji!r}: not one of Telegram\'s reactions (e.g. 👍 ❤ 😁 🔥)')
        params = {"emoji": normalized, "message_id": _id(raw, "message_id", "reply_to", required=True)}
    elif kind == "wait":
        params = {"delay": _delay(raw)}
    elif kind in ("remember", "plan"):
        params = {"content": _text(raw, "content", "text")}
    elif kind == "think":
        params = {"text": raw.get("text") if isinstance(raw.get("text"), str) else ""}
    elif kind == "retrieve":
        params = {"urls": _urls(raw)}
    else:
        params = {}
    return Task(kind=kind, params=params)


def validate_tasks(raw_tasks: list[Any]) -> tuple[list[Task], list[str]]:
    """Validate each task; return the valid ones in order and one error line per invalid one."""
    tasks: list[Task] = []
    errors: list[str] = []
    for index, raw in enumerate(raw_tasks, start=1):
        try:
            tasks.append(validate_task(raw))
        except TaskError as exc:
            kind = raw.get("kind") if isinstance(raw, dict) else None
            errors.append(f"task {index}" + (f" ({kind})" if isinstance(kind, str) else "") + f": {exc}")
    return tasks, errors


def task_list_schema() -> dict[str, Any]:
    """The reply schema in the OpenAPI subset Gemini's response_schema accepts."""
    string = {"type": "STRING"}
    integer = {"type": "INTEGER", "nullable": True}
    return {
        "type": "ARRAY",
        "items": {
            "type": "OBJECT",
            "properties": {
                "kind": {"type": "STRING", "enum": list(KINDS)},
                "text": string,
                "reply_to": integer,
                "sticker_set": string,
                "name": string,
                "emoji": string,
                "message_id": integer,
                "delay": {"type": "NUMBER"},
                "content": string,
                "urls": {"type": "ARRAY", "items": string},
            },
            "required": ["kind"],
            "propertyOrdering": [
                "kind",
                "text",
                "reply_to",
                "sticker_set",
                "name",
                "emoji",
                "message_id",
                "delay",
                "content",
                "urls",
            ],
        },
    }
