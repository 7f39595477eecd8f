"""Reading an export file into JSON: refused before it is parsed when too big, and named with the
reason when it is not UTF-8, not JSON, or nested deeper than any export is."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from django.conf import settings

#: The largest id the import accepts (chats, users, messages): Telegram's fit in 52 bits.
MAX_ID = 2**52

#: Telegram Desktop's exports nest about ten levels (a poll's answers in a message in a chat in the
#: chat list); anything far deeper is not an export.
MAX_DEPTH = 32


class ChatExportError(ValueError):
    """A file the import refuses; the message names the file, where in it, the field and the fix."""


def shown(value: Any, width: int = 60) -> str:
    """A value as an error quotes it, cut short."""
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def read_export(path: Path) -> Any:
    """The file's JSON. Its size is checked against CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES before a byte
    is read, and no more than the cap is ever read."""
    cap = int(settings.CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES)
    try:
        info = path.stat()
    except OSError as exc:
        raise ChatExportError(f"{path}: cannot be read ({exc.strerror}): check the path") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ChatExportError(f"{path}: not a regular file: give the export's result.json")
    if info.st_size > cap:
        raise ChatExportError(
            f"{path}: {info.st_size:,} bytes, more than the {cap:,} bytes an export may have "
            "(CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES): export fewer chats or a shorter date range, "
            "or raise the cap"
        )
    with path.open("rb") as handle:
        raw = handle.read(cap + 1)
    if len(raw) > cap:
        raise ChatExportError(
            f"{path}: grew beyond {cap:,} bytes (CINDY_IMPORT_MAX_CHAT_EXPORT_BYTES) while it was read: "
            "import it once the export has finished"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ChatExportError(
            f"{path}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start:,}): Telegram Desktop "
            "writes result.json in UTF-8; give the file it wrote, unconverted"
        ) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChatExportError(
            f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}): choose the "
            "machine-readable JSON format in Telegram Desktop's export, not HTML"
        ) from exc
    except RecursionError as exc:
        raise ChatExportError(
            f"{path}: nested deeper than any export ({MAX_DEPTH} levels): not a Telegram Desktop export"
        ) from exc
    except ValueError as exc:  # a number of thousands of digits, which Python refuses to convert
        raise ChatExportError(
            f"{path}: not an export's JSON ({exc}): give Telegram Desktop's result.json"
        ) from exc
    _check_depth(path, data)
    return data


def _check_depth(path: Path, data: Any) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise ChatExportError(
                f"{path}: nested deeper than any export ({MAX_DEPTH} levels): not a Telegram Desktop export"
            )
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
