"""Curated media descriptions: `media/<unique id>.json` plus the media file beside it (same stem).

    {"unique_id": "901422453274706125", "kind": "sticker", "sticker_set_name": "MrRibbit",
     "sticker_name": "💻", "description": "A cartoon frog ...", "mime_type": "image/webp"}

Every file cw-telegram-agent writes is read: `unique_id` and `kind` may be left out (the file stem is
the id), `mime_type` fills the MIME column (`mime`, written by older Cindy exports, too), and every kind
it writes is known. A curated description always wins over an AI one for the same unique id: importing
overwrites the AI row. Unknown keys (`ts`, `last_used_at`, `description_retry_count` ...) are kept in
`extra`; so are values a column cannot hold exactly: a `status` other than "curated" (a curated row's
status is always "curated"), an integer or null `duration`, a `kind` Cindy does not know (imported as
"other" with a warning). `key_order` keeps the file's key order, so export writes the same document
back: import, export, import, export is byte-identical from the first export on, and the first export
differs from the source only in whitespace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile

from media_catalog.models import STICKER_KINDS, MediaDescription, MediaKind

_STRING_KEYS = ("sticker_set_name", "sticker_set_title", "sticker_name")
_MIME_KEYS = ("mime_type", "mime")  # the original's key, then the one older Cindy exports wrote
COLUMN_KEYS = ("unique_id", "kind", *_STRING_KEYS, "description", "status", *_MIME_KEYS, "duration")
# The order of a description made in the admin (the original's order for the keys it writes).
DEFAULT_ORDER = ("unique_id", "kind", *_STRING_KEYS, "description", "status", "mime_type", "duration")
# Keys an imported file left out on purpose: export does not add them back.
_NEVER_ADDED = ("unique_id", "kind", "status", *_MIME_KEYS)
_LIMITS = {
    "unique_id": 128,
    "sticker_set_name": 128,
    "sticker_set_title": 255,
    "sticker_name": 64,
    "mime": 100,
}


class CuratedMediaError(ValueError):
    """A curated description cannot be used; the message names the file, field, value and fix."""


@dataclass
class CuratedMedia:
    values: dict[str, Any]  # MediaDescription field values
    media_path: Path | None


def find_media_file(json_path: Path) -> Path | None:
    """The media file beside a description: same stem, any other extension (first by name)."""
    candidates = sorted(
        p
        for p in json_path.parent.glob(json_path.stem + ".*")
        if p.suffix != ".json" and p.stem == json_path.stem
    )
    return candidates[0] if candidates else None


def parse_curated_media(
    text: str, *, source: str, stem: str, warnings: list[str] | None = None
) -> dict[str, Any]:
    """Validate one description file and return `MediaDescription` field values.

    Problems that do not stop the import (an unknown kind, a sticker without its set) are appended to
    `warnings`. Values a column cannot hold exactly (`"duration": 3`, `"duration": null`, a status
    other than "curated") are kept verbatim in `extra`, and `key_order` records the file's key order.
    """
    warnings = warnings if warnings is not None else []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CuratedMediaError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): fix the syntax"
        ) from exc
    if not isinstance(data, dict):
        raise CuratedMediaError(f"{source}: the top level must be a JSON object with a description")
    kept: dict[str, Any] = {}  # known keys whose value no column holds exactly
    values: dict[str, Any] = {"unique_id": _unique_id(data, source, stem, kept)}
    for key in _STRING_KEYS:
        values[key] = _string(data, key, source, kept)
    values["kind"] = _kind(data, values, source, kept, warnings)
    values["description"] = _description(data, source, kept, warnings)
    mime_key = next((key for key in _MIME_KEYS if key in data), None)
    values["mime"] = _string(data, mime_key, source, kept) if mime_key else ""
    for key in _MIME_KEYS:
        if key in data and key != mime_key:
            kept[key] = data[key]
    for key, limit in _LIMITS.items():
        if len(values[key]) > limit:
            raise CuratedMediaError(
                f'{source}: "{key}" is "{values[key][:40]}…": longer than {limit} characters'
            )
    values["duration"] = _duration(data, source, kept)
    status = data.get("status")
    if "status" in data and status != MediaDescription.Status.CURATED:
        kept["status"] = status
    unknown = {key: value for key, value in data.items() if key not in COLUMN_KEYS}
    values["extra"] = {key: ({**kept, **unknown})[key] for key in data if key in kept or key in unknown}
    values["key_order"] = list(data)
    return values


def _unique_id(data: dict, source: str, stem: str, kept: dict) -> str:
    if "unique_id" not in data:
        return stem  # the file stem is the id, as in the original's directory source
    unique_id = data["unique_id"]
    if isinstance(unique_id, int) and not isinstance(unique_id, bool):
        kept["unique_id"], unique_id = unique_id, str(unique_id)
    if not isinstance(unique_id, str) or not unique_id.strip():
        raise CuratedMediaError(
            f'{source}: "unique_id" is {_show(unique_id)}: write the media\'s unique id as a string, '
            "or leave it out (the file name is the id)"
        )
    if unique_id != stem:
        raise CuratedMediaError(
            f'{source}: "unique_id" is "{unique_id}" but the file is named {stem}.json: '
            f"rename the file to {unique_id}.json"
        )
    return unique_id


def _string(data: dict, key: str, source: str, kept: dict) -> str:
    value = data.get(key)
    if key in data and value is None:
        kept[key] = None
    if value is not None and not isinstance(value, str):
        raise CuratedMediaError(f'{source}: "{key}" is {_show(value)}: write it as a string')
    return value or ""


def _kind(data: dict, values: dict, source: str, kept: dict, warnings: list[str]) -> str:
    if "kind" not in data:
        return MediaKind.STICKER.value if values["sticker_set_name"] else MediaKind.OTHER.value
    kind = data["kind"]
    if not isinstance(kind, str) or not kind.strip():
        raise CuratedMediaError(
            f'{source}: "kind" is {_show(kind)}: use one of {", ".join(MediaKind.values)}'
        )
    if kind not in MediaKind.values:
        kept["kind"] = kind
        warnings.append(
            f'{source}: "kind" is {_show(kind)}, not one of {", ".join(MediaKind.values)}: '
            'imported as "other" (the original kind is kept and exported again); '
            "use a known kind to have it shown as one"
        )
        return MediaKind.OTHER.value
    if kind in STICKER_KINDS and not (values["sticker_set_name"] and values["sticker_name"]):
        warnings.append(
            f'{source}: a {kind} without "sticker_set_name" and "sticker_name" is described by its unique id '
            'only, and agents cannot send it by name: add both (e.g. "MrRibbit", "💻")'
        )
    return kind


def _description(data: dict, source: str, kept: dict, warnings: list[str]) -> str | None:
    description = data.get("description")
    if description is None:
        if "description" in data:
            kept["description"] = None
        warnings.append(f"{source}: no description: the agent sees this media as undescribed; write one")
        return None
    if not isinstance(description, str) or not description.strip():
        raise CuratedMediaError(
            f'{source}: "description" is {_show(description)}: write what the media shows as a non-empty string'
        )
    return description


def _duration(data: dict, source: str, kept: dict) -> float | None:
    duration = data.get("duration")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int | float)):
        raise CuratedMediaError(
            f'{source}: "duration" is {_show(duration)}: write seconds as a number, e.g. 3.5'
        )
    if "duration" in data and (duration is None or isinstance(duration, int)):
        kept["duration"] = duration  # int stays int, null stays null
    return float(duration) if duration is not None else None


def curated_media_unchanged(*, unique_id: str, source_file: str, content_hash: str) -> bool:
    return MediaDescription.objects.filter(
        unique_id=unique_id,
        source=MediaDescription.Source.CURATED,
        source_file=source_file,
        content_hash=content_hash,
    ).exists()


def curated_media_save(
    *,
    values: dict[str, Any],
    media_path: Path | None,
    origin_dir: str,
    source_file: str,
    content_hash: str,
    store_file: bool = True,
) -> str:
    """Create or overwrite the description for `values["unique_id"]` as curated; return created/updated.

    The media file is copied into the FileField storage (the old copy is removed first).
    """
    row = MediaDescription.objects.filter(unique_id=values["unique_id"]).first()
    result = "updated" if row else "created"
    row = row or MediaDescription(unique_id=values["unique_id"])
    for key, value in values.items():
        setattr(row, key, value)
    row.status = MediaDescription.Status.CURATED
    row.source = MediaDescription.Source.CURATED
    row.origin_dir = origin_dir
    row.source_file = source_file
    row.content_hash = content_hash
    if store_file:
        if row.file:
            row.file.delete(save=False)
        if media_path is not None:
            row.file.save(
                f"{row.unique_id}{media_path.suffix}", ContentFile(media_path.read_bytes()), save=False
            )
    row.save()
    return result


def media_to_file(row: MediaDescription) -> dict[str, Any]:
    """One curated row as its JSON document, with the keys in the order the file had them.

    A value kept verbatim in `extra` is written while it still agrees with its column (an edit made in
    the admin wins); keys the file left out stay out, and fields set later in the admin are appended.
    """
    order = list(row.key_order or DEFAULT_ORDER)
    mime_key = "mime" if "mime" in order and "mime_type" not in order else "mime_type"
    columns: dict[str, Any] = {
        "unique_id": row.unique_id,
        "kind": row.kind,
        **{key: getattr(row, key) for key in _STRING_KEYS},
        "description": row.description,
        "status": MediaDescription.Status.CURATED.value,
        mime_key: row.mime,
        "duration": row.duration,
    }
    extra = row.extra or {}
    data: dict[str, Any] = {}
    for key in order:
        if key in extra and _kept_value_holds(key, extra[key], columns):
            data[key] = extra[key]
        elif key in columns and (row.key_order or columns[key] not in ("", None)):
            data[key] = columns[key]
        elif key in extra and key not in columns:
            data[key] = extra[key]
    for key, value in extra.items():
        if key not in data and key not in columns:
            data[key] = value
    for key, value in columns.items():
        if key not in data and value not in ("", None) and not (row.key_order and key in _NEVER_ADDED):
            data[key] = value
    return data


def _kept_value_holds(key: str, kept: Any, columns: dict[str, Any]) -> bool:
    """Whether a verbatim value from the file still says what its column says."""
    if key not in columns or key == "status":
        return True
    column = columns[key]
    if kept is None:
        return column in ("", None)
    if key == "duration":
        return column is not None and float(kept) == column
    if key == "kind":
        return column == MediaKind.OTHER
    if key == "unique_id":
        return str(kept) == column
    return kept == column


def curated_media_export(*, out_dir: Path) -> int:
    """Write every curated description (and its media file) into `out_dir`; return how many."""
    out_dir.mkdir(parents=True, exist_ok=True)
    count = 0
    for row in MediaDescription.objects.filter(source=MediaDescription.Source.CURATED).order_by("unique_id"):
        (out_dir / f"{row.unique_id}.json").write_text(
            json.dumps(media_to_file(row), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        if row.file:
            suffix = Path(row.file.name).suffix
            with row.file.open("rb") as handle:
                (out_dir / f"{row.unique_id}{suffix}").write_bytes(handle.read())
        count += 1
    return count


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "…"
