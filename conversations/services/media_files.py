"""Media files that nothing uses: files under MEDIA_ROOT's media folders that no row names.

A file is in use when a `FileField` of any model names it (catalog descriptions, stickers, library
items and whatever else stores a file that way), or when a message's media part names it (`file`,
or `extra.file`: the gateway's downloads). Only the folders those two kinds of reference live in are
scanned (`scanned_folders`); profile photos and sandbox uploads have pages of their own and are
left alone. A file newer than the grace period is never unused: a download or upload may still be
on its way to the row that will name it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import models

from cindy_site.clock import now
from conversations.models import Message
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem, MediaPartError, StoredMedia

#: The gateway's download folder (engine.media.MEDIA_STORE; named here so that reading it does not
#: import the gateway's code).
MEDIA_STORE = "media_store"
DEFAULT_GRACE = dt.timedelta(days=1)
#: How many messages naming a media item are looked at to find a downloaded copy of it.
MESSAGES_LOOKED_AT = 20


@dataclass(frozen=True)
class UnusedFile:
    name: str  # relative to MEDIA_ROOT, with forward slashes
    size: int
    modified: dt.datetime


def _file_fields() -> Iterator[tuple[type[models.Model], str, str]]:
    """(model, field name, upload folder) of every concrete FileField of the project."""
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, models.FileField) and field.concrete:
                folder = field.upload_to if isinstance(field.upload_to, str) else ""
                yield model, field.name, folder.split("/", 1)[0]


def scanned_folders() -> list[str]:
    folders = {folder for _model, _field, folder in _file_fields() if folder}
    return sorted(folders | {MEDIA_STORE})


def used_names() -> set[str]:
    """Every file name (relative to MEDIA_ROOT) a row refers to."""
    used: set[str] = set()
    for model, field, _folder in _file_fields():
        used.update(
            name
            for name in model._default_manager.exclude(**{field: ""}).values_list(field, flat=True)
            if name
        )
    for media in Message.objects.exclude(media=[]).values_list("media", flat=True).iterator(chunk_size=2000):
        for part in media or []:
            try:
                item = StoredMedia.from_part(part)
            except MediaPartError:
                continue  # a malformed part names no file it could keep
            used.update(name for name in (item.file, item.stored_file) if name)
    return used


def unused_media_files(*, grace: dt.timedelta = DEFAULT_GRACE) -> list[UnusedFile]:
    """Files in the scanned folders that no row names and that are older than `grace`, oldest first."""
    root = Path(settings.MEDIA_ROOT)
    used = used_names()
    cutoff = now() - grace
    found = []
    for folder in scanned_folders():
        base = root / folder
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.is_symlink() or not path.is_file():
                continue
            name = path.relative_to(root).as_posix()
            stat = path.stat()
            modified = dt.datetime.fromtimestamp(stat.st_mtime, tz=dt.UTC)
            if name in used or modified > cutoff:
                continue
            found.append(UnusedFile(name=name, size=stat.st_size, modified=modified))
    return sorted(found, key=lambda f: (f.modified, f.name))


def unused_media_files_delete(*, names: list[str], grace: dt.timedelta = DEFAULT_GRACE) -> list[str]:
    """Delete those of `names` that are still unused now (checked again, so a file a row took up since
    the list was shown stays); returns the names deleted."""
    unused = {f.name for f in unused_media_files(grace=grace)}
    root = Path(settings.MEDIA_ROOT)
    deleted = []
    for name in names:
        if name in unused:
            (root / name).unlink(missing_ok=True)
            deleted.append(name)
    return deleted


def media_description_file(row: MediaDescription) -> tuple[Path, MediaItem] | None:
    """The file of a catalog row (the catalog's copy, else the newest downloaded copy a message
    names) and the media part that describes it; None when no copy is stored."""
    root = Path(settings.MEDIA_ROOT)
    part = MediaItem(
        media_kind=row.kind,
        unique_id=row.unique_id,
        mime=row.mime,
        sticker_set_name=row.sticker_set_name,
        sticker_name=row.sticker_name,
    )
    if row.file and (root / row.file.name).is_file():
        return root / row.file.name, part
    candidates = Message.objects.filter(media__icontains=row.unique_id).order_by("-date", "-pk")
    for media in candidates.values_list("media", flat=True)[:MESSAGES_LOOKED_AT]:
        for stored in media or []:
            try:
                found = StoredMedia.from_part(stored)
            except MediaPartError:
                continue  # another copy may do
            name = found.stored_file
            if found.unique_id == row.unique_id and name and (root / name).is_file():
                return root / name, replace(part, mime=found.mime or row.mime)
    return None
