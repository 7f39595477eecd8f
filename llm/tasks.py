"""Task kinds the LLM may ask for, and their validation.

LLM output is untrusted: every task is checked against its kind's rules here. Anything unknown or
malformed becomes an error line instead of a task. Values that are usable once bounded are bounded
with a note (a negative or endless wait, an overlong message, a lone surrogate), and tasks that mean
nothing (a send without text) are dropped with a note: neither fails the turn.

Every task may carry an `id` (kept as text) and `depends_on` (ids of tasks it must wait for). The
stored kinds (`remember`, `plan`, ... see `memory.stored_kinds`) are validated by one shared rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm.image_task import image_params
from llm.task_fields import (
    MAX_MESSAGE_ID,
    MAX_WAIT_SECONDS,
    TELEGRAM_MESSAGE_LIMIT,
    TaskError,
    check_url,
    clean_text,
    depends_on_of,
    message_id_of,
    optional_text,
    required_text,
    retrieve_urls,
    short_repr,
    split_message,
    task_id_of,
    wait_delay,
)
from memory.stored_kinds import stored_kind, stored_kinds

__all__ = ["MAX_MESSAGE_ID", "MAX_WAIT_SECONDS", "TELEGRAM_MESSAGE_LIMIT", "TaskError", "check_url"]

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
    # A picture made from a description (llm/images.py), sent as a photo.
    "image",
    # A voice note: the text spoken (llm/speech.py) and sent as Telegram voice message.
    "voice",
)
#: Older names the original accepts for a kind.
KIND_ALIASES = {"photo": "send_media"}
#: Pages fetched per retrieve round; further URLs are skipped and the model is told so.
MAX_RETRIEVE_URLS = 3
#: The longest text one voice note says (about two minutes of speech).
MAX_VOICE_CHARACTERS = 2000
#: At most this many parts of one send are kept, so its typing time stays sane; the rest is cut.
MAX_SEND_PARTS = 4

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
    image: description, caption, references, reply_to|None (llm.image_task);
    stored kinds: content ("" deletes), created|None, and the kind's declared extra fields;
    block, unblock, clear-conversation, shutdown: {}.

    `id` is the reply's own id for the task (None when it gave none); `depends_on` the ids it waits for.
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    depends_on: tuple[str, ...] | None = None  # None: not given (run after the task before it)


def normalize_reaction(emoji: str) -> str | None:
    """The emoji in Telegram's spelling if it is an allowed reaction, else None."""
    cleaned = (emoji or "").strip().replace("\ufe0f", "")
    return cleaned if cleaned in TELEGRAM_REACTIONS else None


def _stored(kind: str, raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The shared rule for stored kinds: content (empty deletes), created, declared extra fields."""
    spec = stored_kind(kind)
    assert spec is not None
    content = next((text for name in spec.content_names if (text := optional_text(raw, name, notes))), "")
    if not content.strip() and task_id_of(raw) is None:
        name = spec.content_names[0]
        raise TaskError(
            f'"{name}" is missing or empty: write what to store (empty {name} needs an "id" to delete)'
        )
    created = raw.get("created")
    if created is not None and not isinstance(created, str | int | float):
        raise TaskError(f'"created" is {short_repr(created)}: give an ISO 8601 date or date-time')
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
                raise TaskError(f'"{param.name}" is {short_repr(value)}: it must be a whole number')
            value = int(str(value).strip()[:20])
        elif not isinstance(value, str):
            raise TaskError(f'"{param.name}" is {type(value).__name__}: it must be text')
        else:
            value = clean_text(value, notes, f'"{param.name}"')
        params[param.name] = value
    return params


def _peer_id(raw: dict[str, Any], *names: str) -> int:
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


def _send(raw: dict[str, Any], task_id: str | None, notes: list[str]) -> list[dict[str, Any]]:
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


def _voice(raw: dict[str, Any], notes: list[str]) -> dict[str, Any] | None:
    """A voice task's text and reply_to; None (dropped with a note) when it says nothing."""
    value = raw.get("text", raw.get("message"))
    if value is not None and not isinstance(value, str):
        raise TaskError(f'"text" is {type(value).__name__}: it must be the text to say')
    if not (value or "").strip():
        notes.append("a voice task without text was dropped")
        return None
    text = clean_text(value.strip(), notes, '"text"')
    if len(text) > MAX_VOICE_CHARACTERS:
        raise TaskError(
            f'"text" is {len(text)} characters: a voice note says at most {MAX_VOICE_CHARACTERS}; '
            "split it into several voice tasks or send the rest as text"
        )
    return {"text": text, "reply_to": message_id_of(raw, "reply_to", required=False)}


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
        raise TaskError(f'kind "{short_repr(kind)[1:-1]}" is unknown: use one of {", ".join(known_kinds())}')
    task_id, depends_on = task_id_of(raw), depends_on_of(raw)
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
            "sticker_set": "" if canonical else required_text(raw, "sticker_set", "set", notes=notes),
            "name": required_text(raw, "name", "sticker", notes=notes),
            "reply_to": message_id_of(raw, "reply_to", required=False),
        }
    elif kind == "react":
        emoji = raw.get("emoji")
        normalized = normalize_reaction(emoji) if isinstance(emoji, str) else None
        if normalized is None:
            raise TaskError(
                f'"emoji" is {short_repr(emoji)}: not one of Telegram\'s reactions (e.g. 👍 ❤ 😁 🔥)'
            )
        params = {
            "emoji": normalized,
            "message_id": message_id_of(raw, "message_id", "reply_to", required=True),
        }
    elif kind == "wait":
        params = {"delay": wait_delay(raw, notes)}
    elif kind == "think":
        params = {"text": raw.get("text") if isinstance(raw.get("text"), str) else ""}
    elif kind == "retrieve":
        urls = retrieve_urls(raw, notes)
        if not urls:
            return []  # an empty list asks for nothing: dropped silently, as the original does
        params = {"urls": urls}
    elif kind == "xsend":
        params = {
            "target_channel_id": _peer_id(raw, "target_channel_id", "channel_id"),
            "intent": optional_text(raw, "intent", notes).strip(),
        }
    elif kind == "send_media":
        params = {
            "unique_id": required_text(raw, "unique_id", "id", notes=notes).strip(),
            "reply_to": message_id_of(raw, "reply_to", required=False),
        }
    elif kind == "image":
        params = image_params(raw, notes)
    elif kind == "voice":
        params = _voice(raw, notes)
        if params is None:
            return []
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
        return task_id_of(raw)
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
            label = f" ({short_repr(kind)[1:-1]})" if isinstance(kind, str) else ""
            errors.append(f"task {index + 1}{label}: {exc}")
    return tasks, errors, notes
