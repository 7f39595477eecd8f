"""The stored kinds in the original system's state files, for `exportagents` and `importagents --state`.

Layout under a state directory, as the original kept it:

- `<agent>/memory.json`: `{"memory": [...], "intention": [...]}`: the per-agent kinds;
- `<agent>/memory/<channel id>.json`: `{"plan": [...], "note": [...], "summary": [...]}`: the
  per-channel kinds.

Each entry is what the prompt shows (`StoredKind.section_entry`: `id`, `content`, `created` and the
kind's fields, e.g. a summary's `min_message_id` / `max_message_id` / `first_message_date` /
`last_message_date`). Import goes through `stored_entry_apply`, so it is idempotent: an entry's id
updates the row that has it. Unknown properties and fields are left alone.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from memory.services.stored import stored_entries, stored_entry_apply
from memory.stored_kinds import StoreContext, StoredKind, stored_kinds


class StateFileError(ValueError):
    """A state file that cannot be read; the message names the file and the fix."""


def _file_kinds(*, per_channel: bool) -> list[StoredKind]:
    return [k for k in stored_kinds() if k.file_property and k.per_channel == per_channel]


def _channels(agent_id: int) -> list[int]:
    ids: set[int] = set()
    for spec in _file_kinds(per_channel=True):
        rows = spec.model.objects.filter(agent_id=agent_id).exclude(channel_id=None)
        ids.update(rows.values_list("channel_id", flat=True).distinct())
    return sorted(ids)


def _document(kinds: list[StoredKind], context: StoreContext) -> dict[str, list[dict[str, Any]]]:
    document = {}
    for spec in kinds:
        entries = stored_entries(kind=spec.kind, context=context)
        if entries:
            document[spec.file_property] = entries
    return document


def state_export(*, agent_id: int, agent_dir: Path) -> int:
    """Write one agent's state files into `agent_dir`; returns the files written."""
    written = 0
    files = [(agent_dir / "memory.json", _file_kinds(per_channel=False), StoreContext(agent_id, 0))]
    for channel_id in _channels(agent_id):
        context = StoreContext(agent_id, channel_id)
        files.append((agent_dir / "memory" / f"{channel_id}.json", _file_kinds(per_channel=True), context))
    for path, kinds, context in files:
        document = _document(kinds, context)
        if document:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            written += 1
    return written


def _read(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateFileError(f"{path}: cannot be read as JSON ({exc}); fix or remove the file") from exc
    if not isinstance(document, dict):
        raise StateFileError(
            f'{path}: expected an object like {{"summary": [...]}}, found {type(document).__name__}'
        )
    return document


def _apply(path: Path, kinds: list[StoredKind], context: StoreContext, counts: Counter) -> None:
    document = _read(path)
    for spec in kinds:
        entries = document.get(spec.file_property) or []
        if not isinstance(entries, list):
            raise StateFileError(f'{path}: "{spec.file_property}" must be a list of entries')
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not str(entry.get("content") or "").strip():
                raise StateFileError(
                    f'{path}: "{spec.file_property}" entry {index + 1} has no "content": give it one or remove it'
                )
            channel_id, channel_name = context.channel_id, str(entry.get("creation_channel") or "")
            if not spec.per_channel and str(entry.get("creation_channel_id") or "").lstrip("-").isdigit():
                channel_id = int(entry["creation_channel_id"])
            stored_entry_apply(
                kind=spec.kind,
                context=StoreContext(context.agent_id, channel_id, channel_name),
                entry_id=str(entry.get("id") or "") or None,
                content=str(entry["content"]),
                created=str(entry["created"]) if entry.get("created") else None,
                params={p.name: entry.get(p.name) for p in spec.params},
            )
            counts[spec.kind] += 1


def state_import(*, agent_id: int, agent_dir: Path) -> Counter:
    """Read one agent's state files from `agent_dir` (missing files are fine). Returns entries per kind."""
    counts: Counter = Counter()
    top = agent_dir / "memory.json"
    if top.is_file():
        _apply(top, _file_kinds(per_channel=False), StoreContext(agent_id, 0), counts)
    for path in sorted((agent_dir / "memory").glob("*.json")) if (agent_dir / "memory").is_dir() else []:
        if not path.stem.lstrip("-").isdigit():
            raise StateFileError(f"{path}: the file name must be a channel id, like -1001234.json")
        _apply(path, _file_kinds(per_channel=True), StoreContext(agent_id, int(path.stem)), counts)
    return counts


def state_import_all(*, state_dir: Path) -> Counter:
    """Import `<state_dir>/<agent>/...` for every agent in the database (by config name, else name)."""
    from agents.models import Agent

    if not state_dir.is_dir():
        raise StateFileError(
            f"{state_dir}: not a directory; give the state directory that holds one folder per agent"
        )
    counts: Counter = Counter()
    for agent in Agent.objects.order_by("name"):
        agent_dir = state_dir / (agent.config_name or agent.name)
        if agent_dir.is_dir():
            counts.update(state_import(agent_id=agent.pk, agent_dir=agent_dir))
    return counts
