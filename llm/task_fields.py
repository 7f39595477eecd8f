"""Field rules for task validation: message ids, texts, delays, URLs, task ids, long messages.

Each rule returns the value in its checked form, adds a note when it had to bound or clean it, or
raises TaskError saying what is wrong and how to fix it (see `llm.tasks`).
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import urlsplit

#: URLs looked at in one retrieve task; the rest are ignored without a fetch.
MAX_URLS_PER_TASK = 20
#: Telegram refuses longer messages: a longer send is split into parts of at most this many characters.
TELEGRAM_MESSAGE_LIMIT = 4096
#: A wait longer than this is shortened to it (a week): longer ones cannot be meant.
MAX_WAIT_SECONDS = 7 * 24 * 3600
#: Telegram message ids are positive 32-bit integers.
MAX_MESSAGE_ID = 2**31 - 1
MAX_TASK_ID_LENGTH = 100
MAX_DEPENDENCIES = 50


class TaskError(ValueError):
    pass


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str, notes: list[str], where: str) -> str:
    """`value` with lone surrogates (invalid UTF-16 halves, unsendable) replaced by U+FFFD."""
    if not _SURROGATE.search(value):
        return value
    notes.append(f"{where}: invalid characters (lone surrogates) were replaced by �")
    return _SURROGATE.sub("\ufffd", value)


def message_id_of(raw: dict[str, Any], *names: str, required: bool) -> int | None:
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
            raise TaskError(f'"{name}" is {short_repr(value)}: it must be a message id (a number)')
        if not 0 < number <= MAX_MESSAGE_ID:
            raise TaskError(
                f'"{name}" is {short_repr(number)}: not a Telegram message id (1 to {MAX_MESSAGE_ID}); '
                "use the message_id shown in the conversation"
            )
        return number
    if required:
        raise TaskError(f'"{names[0]}" is missing: give the message id')
    return None


def required_text(raw: dict[str, Any], *names: str, notes: list[str]) -> str:
    for name in names:
        value = raw.get(name)
        if isinstance(value, str) and value.strip():
            return clean_text(value, notes, f'"{name}"')
        if value is not None and not isinstance(value, str):
            raise TaskError(f'"{name}" is {type(value).__name__}: it must be text')
    raise TaskError(f'"{names[0]}" is missing or empty')


def optional_text(raw: dict[str, Any], name: str, notes: list[str]) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TaskError(f'"{name}" is {type(value).__name__}: it must be text')
    return clean_text(value, notes, f'"{name}"')


def wait_delay(raw: dict[str, Any], notes: list[str]) -> float:
    value = raw.get("delay", raw.get("seconds"))
    if isinstance(value, str):
        try:
            value = float(value.strip()[:40])
        except ValueError:
            raise TaskError(f'"delay" is {short_repr(value)}: it must be a number of seconds') from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TaskError(f'"delay" is {short_repr(value)}: it must be a number of seconds')
    if isinstance(value, int) and abs(value) > MAX_WAIT_SECONDS:
        value = math.inf if value > 0 else -math.inf  # may be too large for a float; over the bound anyway
    value = float(value)
    if math.isnan(value):
        raise TaskError('"delay" is NaN: it must be a number of seconds')
    if value < 0:
        notes.append(f"wait of {short_repr(value)} s is negative: waited 0 s instead")
        return 0.0
    if value > MAX_WAIT_SECONDS:
        notes.append(
            f"wait of {short_repr(value)} s is longer than a week: waited {MAX_WAIT_SECONDS} s instead"
        )
        return float(MAX_WAIT_SECONDS)
    return value


def check_url(url: str, notes: list[str] | None = None) -> str:
    """`url` stripped if it is an http(s) URL with a host, or a `file:NAME` document; else TaskError.

    `http:NAME` (a scheme, no `//` and no host, only a file name) is read as the document `file:NAME`,
    with a note: persona files written for the original name their documents that way (its sample
    Heidi says "more details at `http:Friends.md`"), and a model that follows them must still get the
    document rather than lose the whole retrieve.
    """
    text = url.strip()
    if text.startswith("file:"):
        if not text[5:].strip():
            raise TaskError(f"URL {short_repr(url)} names no document: write file:NAME, e.g. file:Friends.md")
        return text
    scheme, colon, rest = text.partition(":")
    if colon and scheme.lower() in ("http", "https") and rest.strip() and not re.search(r"[/\\\s?#]", rest):
        if notes is not None:
            notes.append(f"URL {short_repr(url)} has no host: read as your document file:{rest}")
        return f"file:{rest}"
    try:
        parts = urlsplit(text)
        host, _port = parts.hostname, parts.port  # .port raises on a bad port
    except ValueError as exc:
        raise TaskError(f"URL {short_repr(url)} is malformed ({exc}): give a complete http(s) URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise TaskError(f"URL {short_repr(url)} is not an http(s) URL")
    return text


def retrieve_urls(raw: dict[str, Any], notes: list[str] | None = None) -> list[str]:
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
            raise TaskError(f"URL {short_repr(url)} is not text: give http(s) URLs as strings")
        urls.append(check_url(url, notes))
    return list(dict.fromkeys(urls))


def task_id_of(raw: dict[str, Any]) -> str | None:
    value = raw.get("id")
    if value is None or isinstance(value, bool | dict | list):
        return None
    text = str(value).strip()
    if len(text) > MAX_TASK_ID_LENGTH:
        raise TaskError(f'"id" is {short_repr(text)}: ids are at most {MAX_TASK_ID_LENGTH} characters')
    return text or None


def depends_on_of(raw: dict[str, Any]) -> tuple[str, ...] | None:
    value = raw.get("depends_on")
    if value is None:
        return None
    if value == "":
        return ()
    items = value if isinstance(value, list) else [value]
    ids = tuple(dict.fromkeys(str(item).strip() for item in items[:MAX_DEPENDENCIES] if item is not None))
    return tuple(i for i in ids if i and len(i) <= MAX_TASK_ID_LENGTH)


def split_message(
    text: str, limit: int = TELEGRAM_MESSAGE_LIMIT, max_parts: int | None = None
) -> tuple[list[str], int]:
    """`text` in parts of at most `limit` characters, cut at a paragraph, line, sentence or word end.

    With `max_parts`, splitting stops there. Returns the parts and how many characters were left over.
    """
    parts: list[str] = []
    start, end = 0, len(text)
    while start < end and (max_parts is None or len(parts) < max_parts):
        while start < end and text[start].isspace():
            start += 1
        if end - start <= limit:
            part = text[start:end].strip()
            if part:
                parts.append(part)
            start = end
            break
        window = text[start : start + limit]
        cut = -1
        for separator in ("\n\n", "\n", ". ", "! ", "? ", " "):
            found = window.rfind(separator)
            if found >= limit // 2:
                cut = found + len(separator)
                break
        if cut <= 0:
            cut = limit
        parts.append(window[:cut].strip())
        start += cut
    return parts, len(text[start:].strip()) if start < end else 0


def short_repr(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        return "a number too large to print"
    return text if len(text) <= limit else text[: limit - 1] + "…"
