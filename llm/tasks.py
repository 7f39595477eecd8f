"""Task kinds the LLM may ask for, and their validation.

LLM output is untrusted: every task is checked against its kind's rules here. Anything unknown or
malformed becomes an error line instead of a task. Values that are usable once bounded are bounded
with a note (a negative or endless wait, an overlong message, a lone surrogate), and tasks that mean
nothing (a send without text) are dropped with a note: neither fails the turn.

Every task may carry an `id` (kept as text) and `depends_on` (ids of tasks it must wait for). The
stored kinds (`remember`, `plan`, ... see `memory.stored_kinds`) are validated by one shared rule.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memory.stored_kinds import stored_kind, stored_kinds

#: The kinds that act (or are consumed by planning); the stored kinds come from the registry.
ACTION_KINDS = (
    "send",
    "sticker",
    "react",
    "wait",
    "block",
    "unblock",
    "think",
    "retrieve",
    "clear-conversation",
    "shutdown",
    # Initiative kinds: a turn in another of the agent's chats, and an item of its media library.
    "xsend",
    "send_media",
)
#: Older names the original accepts for a kind.
KIND_ALIASES = {"photo": "send_media"}
#: Pages fetched per retrieve round; further URLs are skipped and the model is told so.
MAX_RETRIEVE_URLS = 3
#: URLs looked at in one retrieve task; the rest are ignored without a fetch.
MAX_URLS_PER_TASK = 20
#: Telegram refuses longer messages: a longer send is split into parts of at most this many characters.
TELEGRAM_MESSAGE_LIMIT = 4096
#: At most this many parts of one send are kept, so its typing time stays sane; the rest is cut.
MAX_SEND_PARTS = 4
#: A wait longer than this is shortened to it (a week): longer ones cannot be meant.
MAX_WAIT_SECONDS = 7 * 24 * 3600
#: Telegram message ids are positive 32-bit integers.
MAX_MESSAGE_ID = 2**31 - 1
MAX_TASK_ID_LENGTH = 100
MAX_DEPENDENCIES = 50

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


def known_kinds() -> tuple[str, ...]:
    """Every kind a reply may use: the action kinds, then the registered stored kinds."""
    return ACTION_KINDS + tuple(spec.kind for spec in stored_kinds())


@dataclass
class Task:
    """A validated task. params per kind:

    send: text, reply_to|None; sticker: sticker_set ("" until planning fills in the agent's canonical
    set, for the legacy name-only block), name, reply_to|None; react: emoji, message_id;
    wait: delay (seconds, 0 <= delay <= MAX_WAIT_SECONDS); think: text; retrieve: urls;
    stored kinds: content ("" deletes), created|None, and the kind's declared extra fields;
    block, unblock, clear-conversation, shutdown: {}.

    `id` is the reply's own id for the task (None when it gave none); `depends_on` the ids it waits for.
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    depends_on: tuple[str, ...] | None = None  # None: not given (run after the task before it)


class TaskError(ValueError):
    pass


def normalize_reaction(emoji: str) -> str | None:
    """The emoji in Telegram's spelling if it is an allowed reaction, else None."""
    cleaned = (emoji or "").strip().replace("\ufe0f", "")
    return cleaned if cleaned in TELEGRAM_REACTIONS else None


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str, notes: list[str], where: str) -> str:
    """`value` with lone surrogates (invalid UTF-16 halves, unsendable) replaced by U+FFFD."""
    if not _SURROGATE.search(value):
        return value
    notes.append(f"{where}: invalid characters (lone surrogates) were replaced by �")
    return _SURROGATE.sub("\ufffd", value)


def _message_id(raw: dict[str, Any], *names: str, required: bool) -> int | None:
    for name in names:
        value = raw.get(name)
        if value is None or value == "":
            continue
        number: int | None = None
        if isinstance(value, bool):
            number = None
        elif isinstance(value, int):
            number = value
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
            number = int(value)
        elif isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) <= 20:
            number = int(value.strip())
        if number is None:
            raise TaskError(f'"{name}" is {_short(value)}: it must be a message id (a number)')
        if not 0 < number <= MAX_MESSAGE_ID:
            raise TaskError(
                f'"{name}" is {_short(number)}: not a Telegram message id (1 to {MAX_MESSAGE_ID}); '
                "use the message_id shown in the conversation"
            )
        return number
    if required:
        raise TaskError(f'"{names[0]}" is missing: give the message id')
    return None


def _peer_id(raw: dict[str, Any], *names: str) -> int:
    """A Telegram peer id (users positive, chats and channels negative) from the first name given."""
    for name in names:
        value = raw.get(name)
        if value is None or value == "":
            continue
        text = str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
        if not text.lstrip("-").isdigit() or len(text) > 20 or int(text) == 0:
            raise TaskError(
                f'"{name}" is {_short(value)}: give the channel id shown in the conversation list'
            )
        return int(text)
    raise TaskError(f'"{names[0]}" is missing: give the id of the conversation to act in')


def _text(raw: dict[str, Any], *names: str, notes: list[str]) -> str:
    for name in names:
        value = raw.get(name)
        if isinstance(value, str) and value.strip():
            return clean_text(value, notes, f'"{name}"')
        if value is not None and not isinstance(value, str):
            raise TaskError(f'"{name}" is {type(value).__name__}: it must be text')
    raise TaskError(f'"{names[0]}" is missing or empty')


def _optional_text(raw: dict[str, Any], name: str, notes: list[str]) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TaskError(f'"{name}" is {type(value).__name__}: it must be text')
    return clean_text(value, notes, f'"{name}"')


def _delay(raw: dict[str, Any], notes: list[str]) -> float:
    value = raw.get("delay", raw.get("seconds"))
    if isinstance(value, str):
        try:
            value = float(value.strip()[:40])
        except ValueError:
            raise TaskError(f'"delay" is {_short(value)}: it must be a number of seconds') from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TaskError(f'"delay" is {_short(value)}: it must be a number of seconds')
    value = float(value)
    if math.isnan(value):
        raise TaskError('"delay" is NaN: it must be a number of seconds')
    if value < 0:
        notes.append(f"wait of {_short(value)} s is negative: waited 0 s instead")
        return 0.0
    if value > MAX_WAIT_SECONDS:
        notes.append(f"wait of {_short(value)} s is longer than a week: waited {MAX_WAIT_SECONDS} s instead")
        return float(MAX_WAIT_SECONDS)
    return value


def check_url(url: str) -> str:
    """`url` stripped if it is an http(s) URL with a host, or a `file:NAME` document; else TaskError."""
    text = url.strip()
    if text.startswith("file:"):
        if not text[5:].strip():
            raise TaskError(f"URL {_short(url)} names no document: write file:NAME, e.g. file:Friends.md")
        return text
    try:
        parts = urlsplit(text)
        host, _port = parts.hostname, parts.port  # .port raises on a bad port
    except ValueError as exc:
        raise TaskError(f"URL {_short(url)} is malformed ({exc}): give a complete http(s) URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise TaskError(f"URL {_short(url)} is not an http(s) URL")
    return text


def _urls(raw: dict[str, Any]) -> list[str]:
    value = raw.get("urls", raw.get("url"))
    if isinstance(value, str):
        value = [value]
    if value is None:
        raise TaskError('"urls" is missing: give a list of 1 to 3 http(s) URLs')
    if not isinstance(value, list):
        raise TaskError(f'"urls" is {type(value).__name__}: give a list of 1 to 3 http(s) URLs')
    urls = []
    for url in value[:MAX_URLS_PER_TASK]:
        if not isinstance(url, str):
            raise TaskError(f"URL {_short(url)} is not text: give http(s) URLs as strings")
        urls.append(check_url(url))
    return list(dict.fromkeys(urls))


def _task_id(raw: dict[str, Any]) -> str | None:
    value = raw.get("id")
    if value is None or isinstance(value, bool | dict | list):
        return None
    text = str(value).strip()
    if len(text) > MAX_TASK_ID_LENGTH:
        raise TaskError(f'"id" is {_short(text)}: ids are at most {MAX_TASK_ID_LENGTH} characters')
    return text or None


def _depends_on(raw: dict[str, Any]) -> tuple[str, ...] | None:
    value = raw.get("depends_on")
    if value is None:
        return None
    if value == "":
        return ()
    items = value if isinstance(value, list) else [value]
    ids = tuple(dict.fromkeys(str(item).strip() for item in items[:MAX_DEPENDENCIES] if item is not None))
    return tuple(i for i in ids if i and len(i) <= MAX_TASK_ID_LENGTH)


def _stored(kind: str, raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The shared rule for stored kinds: content (empty deletes), created, declared extra fields."""
    spec = stored_kind(kind)
    assert spec is not None
    content = next((text for name in spec.content_names if (text := _optional_text(raw, name, notes))), "")
    if not content.strip() and _task_id(raw) is None:
        name = spec.content_names[0]
        raise TaskError(
            f'"{name}" is missing or empty: write what to store (empty {name} needs an "id" to delete)'
        )
    created = raw.get("created")
    if created is not None and not isinstance(created, str | int | float):
        raise TaskError(f'"created" is {_short(created)}: give an ISO 8601 date or date-time')
    params: dict[str, Any] = {"content": content}
    if created not in (None, ""):
        params["created"] = str(created)[:64]
    for param in spec.params:
        value = raw.get(param.name)
        if value is None:
            continue
        if param.type == "int":
            if isinstance(value, bool) or not (
                isinstance(value, int) or str(value).strip().lstrip("-").isdigit()
            ):
                raise TaskError(f'"{param.name}" is {_short(value)}: it must be a whole number')
            value = int(str(value).strip()[:20])
        elif not isinstance(value, str):
            raise TaskError(f'"{param.name}" is {type(value).__name__}: it must be text')
        else:
            value = clean_text(value, notes, f'"{param.name}"')
        params[param.name] = value
    return params


def split_message(text: str, limit: int = TELEGRAM_MESSAGE_LIMIT) -> list[str]:
    """`text` in parts of at most `limit` characters, cut at a paragraph, line, sentence or word end."""
    parts: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = -1
        for separator in ("\n\n", "\n", ". ", "! ", "? ", " "):
            found = window.rfind(separator)
            if found >= limit // 2:
                cut = found + len(separator)
                break
        if cut <= 0:
            cut = limit
        parts.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        parts.append(rest)
    return parts


def _send(raw: dict[str, Any], task_id: str | None, notes: list[str]) -> list[dict[str, Any]]:
    value = raw.get("text", raw.get("message"))
    if value is not None and not isinstance(value, str):
        raise TaskError(f'"text" is {type(value).__name__}: it must be text')
    if not (value or "").strip():
        notes.append("a send task without text was dropped")
        return []
    text = clean_text(value, notes, '"text"')
    reply_to = _message_id(raw, "reply_to", required=False)
    parts = split_message(text) if len(text) > TELEGRAM_MESSAGE_LIMIT else [text]
    if len(parts) > 1:
        kept = parts[:MAX_SEND_PARTS]
        notes.append(
            f"a send of {len(text)} characters was split into {len(kept)} messages (Telegram allows "
            f"{TELEGRAM_MESSAGE_LIMIT} per message)"
            + (
                f"; the last {sum(map(len, parts[MAX_SEND_PARTS:]))} characters were cut"
                if len(parts) > len(kept)
                else ""
            )
        )
        parts = kept
    return [{"text": part, "reply_to": reply_to if index == 0 else None} for index, part in enumerate(parts)]


def validate_task(raw: Any, notes: list[str] | None = None) -> list[Task]:
    """One raw task object → its Tasks (none when dropped with a note, several for a split send).

    Raises TaskError saying what is wrong and how to fix it.
    """
    notes = notes if notes is not None else []
    if not isinstance(raw, dict):
        raise TaskError(f"a task must be an object with a kind, not {type(raw).__name__}")
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind.strip():
        raise TaskError('the task has no "kind"')
    kind = kind.strip().lower()
    kind = KIND_ALIASES.get(kind, kind)
    if kind not in known_kinds():
        raise TaskError(f'kind "{_short(kind)[1:-1]}" is unknown: use one of {", ".join(known_kinds())}')
    task_id, depends_on = _task_id(raw), _depends_on(raw)
    if kind == "send":
        sends = _send(raw, task_id, notes)
        return [
            Task(
                kind,
                params,
                id=task_id if index == 0 else (f"{task_id}#{index + 1}" if task_id else None),
                depends_on=depends_on if index == 0 else None,
            )
            for index, params in enumerate(sends)
        ]
    if kind == "sticker":
        canonical = raw.get("sticker_set") is CANONICAL_STICKER_SET
        params = {
            "sticker_set": "" if canonical else _text(raw, "sticker_set", "set", notes=notes),
            "name": _text(raw, "name", "sticker", notes=notes),
            "reply_to": _message_id(raw, "reply_to", required=False),
        }
    elif kind == "react":
        emoji = raw.get("emoji")
        normalized = normalize_reaction(emoji) if isinstance(emoji, str) else None
        if normalized is None:
            raise TaskError(f'"emoji" is {_short(emoji)}: not one of Telegram\'s reactions (e.g. 👍 ❤ 😁 🔥)')
        params = {
            "emoji": normalized,
            "message_id": _message_id(raw, "message_id", "reply_to", required=True),
        }
    elif kind == "wait":
        params = {"delay": _delay(raw, notes)}
    elif kind == "think":
        params = {"text": raw.get("text") if isinstance(raw.get("text"), str) else ""}
    elif kind == "retrieve":
        urls = _urls(raw)
        if not urls:
            return []  # an empty list asks for nothing: dropped silently, as the original does
        params = {"urls": urls}
    elif kind == "xsend":
        params = {
            "target_channel_id": _peer_id(raw, "target_channel_id", "channel_id"),
            "intent": _optional_text(raw, "intent", notes).strip(),
        }
    elif kind == "send_media":
        params = {
            "unique_id": _text(raw, "unique_id", "id", notes=notes).strip(),
            "reply_to": _message_id(raw, "reply_to", required=False),
        }
    elif stored_kind(kind) is not None:
        params = _stored(kind, raw, notes)
    else:
        params = {}
    return [Task(kind, params, id=task_id, depends_on=depends_on)]


def dedupe_by_id(raw_tasks: list[Any]) -> list[tuple[int, Any]]:
    """(position, task) of the tasks kept: the last task of each id wins, at the place of that last one.

    A reply revises a task by reusing its id; a `think` with the id of an earlier task cancels it.
    """
    ids = [_raw_id(raw) for raw in raw_tasks]
    last = {task_id: index for index, task_id in enumerate(ids) if task_id is not None}
    return [
        (index, raw)
        for index, (raw, task_id) in enumerate(zip(raw_tasks, ids, strict=True))
        if task_id is None or last[task_id] == index
    ]


def _raw_id(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    try:
        return _task_id(raw)
    except TaskError:
        return None


def validate_tasks(raw_tasks: list[Any]) -> tuple[list[Task], list[str], list[str]]:
    """Dedupe by id, then validate each task. Returns (tasks in order, error lines, notes)."""
    tasks: list[Task] = []
    errors: list[str] = []
    notes: list[str] = []
    for index, raw in dedupe_by_id(raw_tasks):
        try:
            tasks.extend(validate_task(raw, notes))
        except TaskError as exc:
            kind = raw.get("kind") if isinstance(raw, dict) else None
            label = f" ({_short(kind)[1:-1]})" if isinstance(kind, str) else ""
            errors.append(f"task {index + 1}{label}: {exc}")
    return tasks, errors, notes


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
