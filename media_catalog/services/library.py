"""The agent's media library: sandbox uploads from the admin, and the Telegram Saved Messages listing.

Descriptions are curated by operators and kept across refreshes; a refresh from Saved Messages adds
new items and drops items that are no longer there. An item's description is the curated description
of its media in the catalog too, so the picture the agent sends is shown with it in the history and
is never described again by the AI.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from media_catalog.models import LibraryItem, MediaDescription, MediaKind
from media_catalog.services.curation import media_description_curate

#: Kinds an uploaded file becomes, by MIME type prefix.
_KIND_BY_MIME = (
    ("image/gif", MediaKind.GIF),
    ("image/", MediaKind.PHOTO),
    ("video/", MediaKind.VIDEO),
    ("audio/", MediaKind.AUDIO),
)


class SavedMedia(Protocol):
    unique_id: str
    media_kind: str
    saved_message_id: int | None
    mime: str


def library_item_upload(*, agent_id: int, upload: UploadedFile, description: str = "") -> LibraryItem:
    """Add an uploaded file to the agent's library; the same bytes again update the description only.

    The unique id is `lib` + the content hash, so it stays the same across uploads, as Telegram's
    file unique ids do.
    """
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    unique_id = f"lib{digest.hexdigest()[:29]}"
    mime = upload.content_type or ""
    kind = next((k for prefix, k in _KIND_BY_MIME if mime.startswith(prefix)), MediaKind.DOCUMENT)
    item = LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id).first()
    if item is None:
        item = LibraryItem(agent_id=agent_id, unique_id=unique_id, kind=kind, mime=mime)
        suffix = Path(upload.name or "").suffix.lower()[:10]
        item.file.save(f"{agent_id}/{unique_id}{suffix}", upload, save=False)
    if description.strip():
        item.description = description.strip()
    return library_item_save(item=item)


@transaction.atomic
def library_item_save(*, item: LibraryItem) -> LibraryItem:
    """Save an item (an admin edit); its description, when it has one, curates its media's."""
    item.save()
    _curate_media_description(item)
    return item


def _curate_media_description(item: LibraryItem) -> None:
    text = item.description.strip()
    if not text:
        return
    row, created = MediaDescription.objects.get_or_create(
        unique_id=item.unique_id,
        defaults={
            "kind": item.kind,
            "mime": item.mime,
            "description": text,
            "source": MediaDescription.Source.CURATED,
            "status": MediaDescription.Status.CURATED,
        },
    )
    if not created and (row.description != text or not row.is_curated):
        media_description_curate(description=row, text=text)


def library_item_sent_as(*, agent_id: int, unique_id: str, sent_unique_id: str) -> None:
    """A library file went out under a new media id (uploaded with a Telegram send): that media gets
    the item's curated description too, so the chat's history shows it and the AI never describes it."""
    item = LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id).first()
    if item is None or not item.description.strip():
        return
    copy = LibraryItem(unique_id=sent_unique_id, kind=item.kind, mime=item.mime, description=item.description)
    with transaction.atomic():
        _curate_media_description(copy)


def library_sync_saved(*, agent_id: int, saved: Iterable[SavedMedia]) -> tuple[int, int]:
    """Make the agent's Telegram library match its Saved Messages. Returns (added, removed).

    Items with an uploaded file (sandbox items) are left alone; a sticker from a set is not a library
    item (it is offered in the sticker list).
    """
    # A sticker from a set joins the sticker list instead (engine.stickers), as in the original.
    found = {m.unique_id: m for m in saved if not getattr(m, "sticker_set_name", "")}
    with transaction.atomic():
        existing = {i.unique_id: i for i in LibraryItem.objects.filter(agent_id=agent_id, file="")}
        gone = [i.pk for uid, i in existing.items() if uid not in found]
        LibraryItem.objects.filter(pk__in=gone).delete()
        added = 0
        for unique_id, media in found.items():
            item = existing.get(unique_id)
            if item is None:
                LibraryItem.objects.create(
                    agent_id=agent_id,
                    unique_id=unique_id,
                    kind=media.media_kind if media.media_kind in MediaKind.values else MediaKind.OTHER,
                    mime=media.mime,
                    saved_message_id=media.saved_message_id,
                )
                added += 1
            elif item.saved_message_id != media.saved_message_id:
                LibraryItem.objects.filter(pk=item.pk).update(saved_message_id=media.saved_message_id)
    return added, len(gone)
