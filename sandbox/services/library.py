"""The sandbox's copy of a media library file, so its chat shows the picture like an uploaded photo."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.conf import settings

from conversations.transport.base import LibraryRef, PermanentError

#: The folder the sandbox chat serves pictures from (sandbox.forms.PHOTO_DIR).
SANDBOX_PHOTO_DIR = "sandbox"


def sandbox_library_part(item: LibraryRef) -> dict[str, Any]:
    """The media part of a sandbox message that shows `item`; its file is copied beside the uploads."""
    source = Path(settings.MEDIA_ROOT) / item.file if item.file else None
    if source is None or not source.is_file():
        raise PermanentError(
            "MEDIA_NOT_FOUND", f"library item {item.unique_id} has no uploaded file ({item.file!r})"
        )
    relative = f"{SANDBOX_PHOTO_DIR}/{item.unique_id}{source.suffix.lower()}"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        shutil.copyfile(source, target)
    return {
        "kind": "media",
        "media_kind": item.media_kind,
        "unique_id": item.unique_id,
        "mime": item.mime,
        "file": relative,
        "path": str(target),
    }
