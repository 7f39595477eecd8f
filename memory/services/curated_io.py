"""Curated memory files: `agents/<Name>/memory/<user id>.json`, read into `Memory` rows and written back.

A file is a JSON array of objects:

    {"kind": "memory", "created": "2025-01-26 14:30:15 UTC", "content": "...",
     "creation_channel": "Alice", "creation_channel_id": 123456789, ...}

Fields this module does not know are kept in `Memory.extra` and written back after the known ones.
`created` is kept exactly as written (`created_raw`) next to the parsed datetime, so export is lossless.
The rows of one file belong to that file: when the file changes they are replaced, and while it does
not change they are left alone (edits made in the admin survive).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

from agents.models import Agent
from memory.models import Memory

KNOWN_KEYS = ("kind", "created", "content", "creation_channel", "creation_channel_id")
FILE_KIND = "memory"


class CuratedFileError(ValueError):
    """A curated file cannot be used; the message names the file, the field, the value and the fix."""


def parse_created(raw: str) -> datetime:
    """Parse "2025-01-26 14:30:15 UTC" (the original format) or any ISO 8601 timestamp, as UTC if naive."""
    text = raw.strip()
    if text.endswith(" UTC"):
        return datetime.strptime(text[:-4].strip(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parse_curated_memories(text: str, *, source: str) -> list[dict[str, Any]]:
    """Validate a memory file and return one dict of `Memory` field values per entry, in file order."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CuratedFileError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
            "fix the syntax, the file must be a JSON array of memory objects"
        ) from exc
    if not isinstance(data, list):
        raise CuratedFileError(
            f"{source}: the top level is a JSON {type(data).__name__}: wrap the memories in a JSON array [...]"
        )
    entries = []
    for index, item in enumerate(data, start=1):
        where = f"{source}: entry {index}"
        if not isinstance(item, dict):
            raise CuratedFileError(f"{where} is {_short(item)}: each entry must be a JSON object")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise CuratedFileError(
                f'{where} "content" is {_short(content)}: write what to remember as a non-empty string'
            )
        created_raw = item.get("created")
        created = None
        if created_raw is not None:
            try:
                if not isinstance(created_raw, str):
                    raise ValueError
                created = parse_created(created_raw)
            except ValueError:
                raise CuratedFileError(
                    f'{where} "created" is {_short(created_raw)}: not a timestamp (e.g. 2025-01-26 14:30:15 UTC)'
                ) from None
            if len(created_raw) > 64:
                raise CuratedFileError(
                    f'{where} "created" is {_short(created_raw)}: longer than 64 characters, shorten it'
                )
        channel = item.get("creation_channel")
        if isinstance(channel, str) and len(channel) > 255:
            raise CuratedFileError(
                f'{where} "creation_channel" is {_short(channel)}: longer than 255 characters, shorten it'
            )
        if channel is not None and not isinstance(channel, str):
            raise CuratedFileError(
                f'{where} "creation_channel" is {_short(channel)}: write the channel name as a string'
            )
        channel_id = item.get("creation_channel_id")
        if channel_id is not None and (isinstance(channel_id, bool) or not isinstance(channel_id, int)):
            raise CuratedFileError(
                f'{where} "creation_channel_id" is {_short(channel_id)}: write the numeric chat id, e.g. 123456789'
            )
        extra = {key: value for key, value in item.items() if key not in KNOWN_KEYS}
        if "kind" in item and item["kind"] != FILE_KIND:
            extra = {"kind": item["kind"], **extra}
        entries.append(
            {
                "content": content,
                "created": created,
                "created_raw": created_raw or "",
                "creation_channel": channel or "",
                "creation_channel_id": channel_id,
                "extra": extra,
                "position": index - 1,
            }
        )
    return entries


def _file_rows(*, agent: Agent, partner_id: int):
    return Memory.objects.filter(agent=agent, kind=Memory.Kind.CURATED, partner_id=partner_id).exclude(
        source_file=""
    )


def curated_memories_unchanged(
    *, agent: Agent, partner_id: int, source_file: str, content_hash: str, empty: bool
) -> bool:
    """True when the rows on record came from this exact file content.

    An empty file leaves no rows to carry its hash, so it is unchanged exactly when no file rows exist.
    """
    rows = list(_file_rows(agent=agent, partner_id=partner_id).values_list("source_file", "content_hash"))
    if not rows:
        return empty
    return all(row == (source_file, content_hash) for row in rows)


def curated_memories_replace(
    *, agent: Agent, partner_id: int, entries: list[dict[str, Any]], source_file: str, content_hash: str
) -> str:
    """Replace the file-owned curated memories of (agent, partner) with `entries`; return created/updated.

    Rows added by hand in the admin (no source file) are kept.
    """
    with transaction.atomic():
        deleted, _ = _file_rows(agent=agent, partner_id=partner_id).delete()
        Memory.objects.bulk_create(
            Memory(
                agent=agent,
                kind=Memory.Kind.CURATED,
                partner_id=partner_id,
                source_file=source_file,
                content_hash=content_hash,
                **entry,
            )
            for entry in entries
        )
    return "updated" if deleted else "created"


def memory_to_entry(memory: Memory) -> dict[str, Any]:
    """One memory as a file entry: known keys first, then the extra fields in their stored order."""
    entry: dict[str, Any] = {"kind": FILE_KIND}
    if memory.created_raw:
        entry["created"] = memory.created_raw
    elif memory.created:
        entry["created"] = memory.created.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    entry["content"] = memory.content
    if memory.creation_channel:
        entry["creation_channel"] = memory.creation_channel
    if memory.creation_channel_id is not None:
        entry["creation_channel_id"] = memory.creation_channel_id
    entry.update(memory.extra or {})
    return entry


def curated_memories_export(*, agent: Agent) -> dict[int, str]:
    """The agent's curated memories as file texts, keyed by partner id."""
    files: dict[int, list[dict[str, Any]]] = {}
    for memory in Memory.objects.filter(agent=agent, kind=Memory.Kind.CURATED).order_by(
        "partner_id", "position", "id"
    ):
        files.setdefault(memory.partner_id, []).append(memory_to_entry(memory))
    return {pid: json.dumps(entries, indent=2, ensure_ascii=False) + "\n" for pid, entries in files.items()}


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
