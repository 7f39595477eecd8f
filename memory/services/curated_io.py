"""Curated memory files: `agents/<stem>/memory/<user id>.json`, read into `Memory` rows and written back.

Every shape cw-telegram-agent ever wrote is read:

    [{"kind": "memory", "created": "2025-01-26 14:30:15 UTC", "content": "...", ...}, ...]
    {"memory": [{...}, ...], "other": "keys are kept"}

An entry's `id` becomes the memory's `entry_id` (what a remember task updates it by). `created` is
kept exactly as written (`created_raw`, or in `extra` when it is not a string) and parsed
when it can be: "2025-01-15", "2025-01-15 14:30:00 PST", ISO 8601, or a Unix time in seconds. A value
that cannot be parsed is kept with a warning. Fields this module does not know, and known fields whose
value a column cannot hold exactly (`"creation_channel_id": null`), are kept in `Memory.extra` and
written back after the known ones. The file's own shape is kept in `CuratedMemoryFile`, so `[]` and
the object form round-trip. The rows of one file belong to that file: when the file changes they are
replaced, and while it does not change they are left alone (edits made in the admin survive).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from django.db import transaction

from agents.models import Agent
from memory.models import CuratedMemoryFile, Memory

KNOWN_KEYS = ("kind", "created", "content", "creation_channel", "creation_channel_id")
FILE_KIND = "memory"
ENVELOPE_KEY = "memory"
BIGINT = 2**63 - 1
# Zone abbreviations seen in memory files (the original wrote local times with %Z).
ZONE_ABBREVIATIONS = {
    "UTC": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3,
    "MSK": 3, "IST": 5.5, "JST": 9, "KST": 9, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
    "HST": -10, "AKST": -9, "AKDT": -8, "PST": -8, "PDT": -7, "MST": -7, "MDT": -6,
    "CST": -6, "CDT": -5, "EST": -5, "EDT": -4, "AST": -4, "ADT": -3,
}  # fmt: skip
_WITH_ZONE = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s+([A-Za-z]{1,5})$")


class CuratedFileError(ValueError):
    """A curated file cannot be used; the message names the file, the field, the value and the fix."""


@dataclass
class MemoryFile:
    entries: list[dict[str, Any]]
    envelope: dict[str, Any] | None = None  # the object form's other keys ("memory" set to None)
    warnings: list[str] = field(default_factory=list)


def parse_created(raw: str | int | float) -> datetime:
    """Parse a `created` value as cw-telegram-agent wrote it; raise ValueError when it is not a time.

    "2025-01-26 14:30:15 UTC", "2025-01-15 14:30:00 PST", "2025-01-15", ISO 8601 (naive means UTC),
    or a Unix time (seconds; milliseconds when the number is that large).
    """
    if isinstance(raw, bool):
        raise ValueError("not a time")
    if isinstance(raw, int | float):
        seconds = raw / 1000 if abs(raw) > 1e11 else raw
        return datetime.fromtimestamp(seconds, tz=UTC)
    text = raw.strip()
    match = _WITH_ZONE.match(text)
    if match:
        offset = ZONE_ABBREVIATIONS.get(match.group(2).upper())
        if offset is None:
            raise ValueError(f"unknown zone abbreviation {match.group(2)}")
        value = datetime.fromisoformat(match.group(1).replace(" ", "T"))
        return value.replace(tzinfo=timezone(timedelta(hours=offset))).astimezone(UTC)
    value = datetime.fromisoformat(text)
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def parse_curated_memories(
    text: str, *, source: str, warnings: list[str] | None = None
) -> list[dict[str, Any]]:
    """The entries of a memory file (see `parse_curated_memory_file`)."""
    parsed = parse_curated_memory_file(text, source=source)
    if warnings is not None:
        warnings.extend(parsed.warnings)
    return parsed.entries


def parse_curated_memory_file(text: str, *, source: str) -> MemoryFile:
    """Validate a memory file: one dict of `Memory` field values per entry, in file order."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CuratedFileError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
            'fix the syntax, the file must be a JSON array of memory objects or {"memory": [...]}'
        ) from exc
    envelope = None
    if isinstance(data, dict):
        if not isinstance(data.get(ENVELOPE_KEY), list):
            raise CuratedFileError(
                f'{source}: the top level is a JSON object without a "memory" list: '
                'write {"memory": [...]} or a JSON array [...] of memory objects'
            )
        envelope = {key: (None if key == ENVELOPE_KEY else value) for key, value in data.items()}
        data = data[ENVELOPE_KEY]
    if not isinstance(data, list):
        raise CuratedFileError(
            f"{source}: the top level is a JSON {type(data).__name__}: wrap the memories in a JSON array [...]"
        )
    result = MemoryFile(entries=[], envelope=envelope)
    for index, item in enumerate(data, start=1):
        result.entries.append(_entry(item, index, f"{source}: entry {index}", result.warnings))
    return result


def _entry(item: Any, index: int, where: str, warnings: list[str]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise CuratedFileError(f"{where} is {_short(item)}: each entry must be a JSON object")
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise CuratedFileError(
            f'{where} "content" is {_short(content)}: write what to remember as a non-empty string'
        )
    kept: dict[str, Any] = {}  # known keys whose value no column holds exactly, kept verbatim
    created_raw, created = item.get("created"), None
    if "created" in item and created_raw is not None:
        try:
            created = parse_created(created_raw)
        except (ValueError, TypeError, OverflowError, OSError):
            warnings.append(
                f'{where} "created" is {_short(created_raw)}: not a time Cindy can read; it is kept as '
                "written but the memory has no date: write e.g. 2025-01-26 14:30:15 UTC"
            )
    if not isinstance(created_raw, str) or len(created_raw) > 64:
        if "created" in item:
            kept["created"] = created_raw
        created_raw = ""
    channel = item.get("creation_channel")
    if channel is not None and (not isinstance(channel, str) or len(channel) > 255):
        warnings.append(
            f'{where} "creation_channel" is {_short(channel)}: kept as written, not shown as a name'
        )
        kept["creation_channel"], channel = channel, None
    elif "creation_channel" in item and channel is None:
        kept["creation_channel"] = None
    channel_id = item.get("creation_channel_id")
    if (
        channel_id is None
        or isinstance(channel_id, bool)
        or not isinstance(channel_id, int)
        or abs(channel_id) > BIGINT
    ):
        if channel_id is not None:
            warnings.append(
                f'{where} "creation_channel_id" is {_short(channel_id)}: not a chat id; kept as written: '
                "write the numeric chat id, e.g. 123456789"
            )
        if "creation_channel_id" in item:
            kept["creation_channel_id"] = channel_id
        channel_id = None
    extra = {key: value for key, value in item.items() if key not in KNOWN_KEYS}
    if "kind" in item and item["kind"] != FILE_KIND:
        extra = {"kind": item["kind"], **extra}
    entry_id = item.get("id")
    ids = {"entry_id": entry_id} if isinstance(entry_id, str) and 0 < len(entry_id) <= 100 else {}
    return {
        **ids,
        "content": content,
        "created": created,
        "created_raw": created_raw or "",
        "creation_channel": channel or "",
        "creation_channel_id": channel_id,
        "extra": {**kept, **extra},
        "position": index - 1,
    }


def _file_rows(*, agent: Agent, partner_id: int):
    return Memory.objects.filter(agent=agent, kind=Memory.Kind.CURATED, partner_id=partner_id).exclude(
        source_file=""
    )


def curated_memories_unchanged(
    *, agent: Agent, partner_id: int, source_file: str, content_hash: str, empty: bool
) -> bool:
    """True when the rows on record came from this exact file content."""
    record = CuratedMemoryFile.objects.filter(agent=agent, partner_id=partner_id).first()
    if record is None or (record.source_file, record.content_hash) != (source_file, content_hash):
        return False
    rows = list(_file_rows(agent=agent, partner_id=partner_id).values_list("source_file", "content_hash"))
    if not rows:
        return empty
    return all(row == (source_file, content_hash) for row in rows)


def curated_memories_replace(
    *,
    agent: Agent,
    partner_id: int,
    entries: list[dict[str, Any]],
    source_file: str,
    content_hash: str,
    envelope: dict[str, Any] | None = None,
) -> str:
    """Replace the file-owned curated memories of (agent, partner) with `entries`; return created/updated.

    Rows added by hand in the admin (no source file) are kept.
    """
    with transaction.atomic():
        deleted, _ = _file_rows(agent=agent, partner_id=partner_id).delete()
        _, created = CuratedMemoryFile.objects.update_or_create(
            agent=agent,
            partner_id=partner_id,
            defaults={"envelope": envelope, "source_file": source_file, "content_hash": content_hash},
        )
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
    return "updated" if deleted or not created else "created"


def memory_to_entry(memory: Memory) -> dict[str, Any]:
    """One memory as a file entry: known keys first, then the extra fields in their stored order.

    The entry's `id` (the id a remember task updates it by) is written where the file had it; a memory
    made in Cindy (by the agent or in the admin) gets its id first, so a re-import keeps it.
    """
    extra = dict(memory.extra or {})
    entry: dict[str, Any] = {} if memory.source_file or "id" in extra else {"id": memory.entry_id}
    entry["kind"] = FILE_KIND
    if "id" in extra and isinstance(extra["id"], str):
        extra["id"] = memory.entry_id
    if memory.created_raw:
        entry["created"] = memory.created_raw
    elif memory.created and "created" not in extra:
        entry["created"] = memory.created.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    entry["content"] = memory.content
    if memory.creation_channel:
        entry["creation_channel"] = memory.creation_channel
    if memory.creation_channel_id is not None:
        entry["creation_channel_id"] = memory.creation_channel_id
    entry.update(extra)
    return entry


def curated_memories_export(*, agent: Agent) -> dict[int, str]:
    """The agent's curated memories as file texts, keyed by partner id, each in the shape it came in."""
    files: dict[int, list[dict[str, Any]]] = {
        record.partner_id: [] for record in CuratedMemoryFile.objects.filter(agent=agent)
    }
    envelopes = dict(CuratedMemoryFile.objects.filter(agent=agent).values_list("partner_id", "envelope"))
    for memory in Memory.objects.filter(agent=agent, kind=Memory.Kind.CURATED).order_by(
        "partner_id", "position", "id"
    ):
        files.setdefault(memory.partner_id, []).append(memory_to_entry(memory))
    texts = {}
    for partner_id, entries in sorted(files.items()):
        envelope = envelopes.get(partner_id)
        document: Any = entries
        if isinstance(envelope, dict):
            document = {key: (entries if key == ENVELOPE_KEY else value) for key, value in envelope.items()}
        texts[partner_id] = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return texts


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
