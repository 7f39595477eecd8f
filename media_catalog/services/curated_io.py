"""Curated media descriptions: `media/<unique id>.json` plus the media file beside it (same stem).

    {"unique_id": "901422453274706125", "kind": "sticker", "sticker_set_name": "MrRibbit",
     "sticker_name": "💻", "description": "A cartoon frog ..."}

A curated description always wins over an AI one for the same unique id: importing overwrites the AI
row. Unknown JSON fields are kept in `extra` and written back after the known ones. A `status` other
than "curated" is kept in `extra` too, because a curated row's status is always "curated". A `kind`
Cindy does not know (say, from a newer Telegram) imports as "other" with a warning; the original is
kept in `extra` and written back by the export, so a round trip loses nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.files.base import ContentFile

from media_catalog.models import MediaDescription, MediaKind

KNOWN_KEYS = (
    "unique_id",
    "kind",
    "sticker_set_name",
    "sticker_set_title",
    "sticker_name",
    "description",
    "status",
    "mime",
    "duration",
)
_STRING_KEYS = ("sticker_set_name", "sticker_set_title", "sticker_name", "mime")
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

    Problems that do not stop the import (an unknown kind) are appended to `warnings`.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CuratedMediaError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): fix the syntax"
        ) from exc
    if not isinstance(data, dict):
        raise CuratedMediaError(
            f"{source}: the top level must be a JSON object with unique_id, kind and description"
        )
    unique_id = data.get("unique_id")
    if isinstance(unique_id, int) and not isinstance(unique_id, bool):
        unique_id = str(unique_id)
    if not isinstance(unique_id, str) or not unique_id.strip():
        raise CuratedMediaError(
            f'{source}: "unique_id" is {_show(unique_id)}: write the media\'s unique id as a string'
        )
    if unique_id != stem:
        raise CuratedMediaError(
            f'{source}: "unique_id" is "{unique_id}" but the file is named {stem}.json: '
            f"rename the file to {unique_id}.json"
        )
    kind = data.get("kind")
    original_kind = None
    if not isinstance(kind, str) or not kind.strip():
        raise CuratedMediaError(
            f'{source}: "kind" is {_show(kind)}: use one of {", ".join(MediaKind.values)}'
        )
    if kind not in MediaKind.values:
        original_kind, kind = kind, MediaKind.OTHER.value
        if warnings is not None:
            warnings.append(
                f'{source}: "kind" is {_show(original_kind)}, not one of {", ".join(MediaKind.values)}: '
                'imported as "other" (the original kind is kept and exported again); '
                "use a known kind to have it shown as one"
            )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise CuratedMediaError(
            f'{source}: "description" is {_show(description)}: write what the media shows as a non-empty string'
        )
    values: dict[str, Any] = {"unique_id": unique_id, "kind": kind, "description": description}
    for key in _STRING_KEYS:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise CuratedMediaError(f'{source}: "{key}" is {_show(value)}: write it as a string')
        values[key] = value or ""
    for key, limit in _LIMITS.items():
        if len(values[key]) > limit:
            raise CuratedMediaError(
                f'{source}: "{key}" is "{values[key][:40]}…": longer than {limit} characters'
            )
    if kind == MediaKind.STICKER and not (values["sticker_set_name"] and values["sticker_name"]):
        raise CuratedMediaError(
            f'{source}: a sticker needs "sticker_set_name" and "sticker_name": add both (e.g. "MrRibbit", "💻")'
        )
    duration = data.get("duration")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int | float)):
        raise CuratedMediaError(
            f'{source}: "duration" is {_show(duration)}: write seconds as a number, e.g. 3.5'
        )
    values["duration"] = float(duration) if duration is not None else None
    extra = {key: value for key, value in data.items() if key not in KNOWN_KEYS}
    status = data.get("status")
    if status is not None and status != MediaDescription.Status.CURATED:
        extra = {"status": status, **extra}
    if original_kind is not None:
        extra = {"kind": original_kind, **extra}
    values["extra"] = extra
    return values


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
    """One curated row as its JSON document: known keys first, then the extra fields."""
    data: dict[str, Any] = {"unique_id": row.unique_id, "kind": row.kind}
    for key in ("sticker_set_name", "sticker_set_title", "sticker_name"):
        if getattr(row, key):
            data[key] = getattr(row, key)
    data["description"] = row.description
    data["status"] = MediaDescription.Status.CURATED.value
    if row.mime:
        data["mime"] = row.mime
    if row.duration is not None:
        data["duration"] = row.duration
    data.update(row.extra or {})
    return data


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
