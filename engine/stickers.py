"""Sticker sets: the sets agents use, imported from the transport into the media catalog.

The prompt offers the stickers of `Agent.sticker_set_names` (and the sets named in
`explicit_stickers`) from `media_catalog.StickerSet`/`Sticker`; on Telegram nothing else fills those
tables, so the gateway imports each configured set that is missing or older than `STALE_AFTER`, on
connect and whenever an agent's sticker settings change. An `import_sticker_set` gateway request runs
the same import.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from cindy_site.clock import now
from conversations.transport.base import LibraryRef, StickerSetInfo
from conversations.transport.base import Transport as ChatTransport
from media_catalog.models import Sticker, StickerAccess, StickerSet

logger = logging.getLogger(__name__)

#: A set fetched longer ago than this is fetched again (sets gain and lose stickers).
STALE_AFTER = dt.timedelta(days=1)
#: After a failed import the set is not asked for again for this long (per gateway).
RETRY_AFTER_SECONDS = 3600.0

_FORMAT_BY_MIME = {
    "application/x-tgsticker": Sticker.Format.ANIMATED,
    "video/webm": Sticker.Format.VIDEO,
}


def sticker_access_record_premium(*, agent_id: int, premium: bool) -> None:
    """Remember whether the account has Telegram Premium (the transport reports it on connect)."""
    StickerAccess.objects.update_or_create(agent_id=agent_id, defaults={"premium": bool(premium)})


def sticker_access_record_saved(*, agent_id: int, saved: list[LibraryRef]) -> bool:
    """Remember the stickers from a set among the account's Saved Messages; True when they changed."""
    stickers = [
        {"set": item.sticker_set_name, "name": item.sticker_name, "unique_id": item.unique_id}
        for item in saved
        if item.media_kind == "sticker" and item.sticker_set_name and item.sticker_name
    ]
    stickers = list({(s["set"], s["name"]): s for s in stickers}.values())
    access, _ = StickerAccess.objects.get_or_create(agent_id=agent_id)
    if access.saved_stickers == stickers:
        return False
    access.saved_stickers = stickers
    access.save(update_fields=["saved_stickers", "updated"])
    return True


def sticker_sets_to_refresh(*, short_names: list[str]) -> list[str]:
    """The sets among `short_names` that the catalog lacks or last fetched before `STALE_AFTER`."""
    fresh = set(
        StickerSet.objects.filter(
            short_name__in=short_names, fetched_at__gte=now() - STALE_AFTER
        ).values_list("short_name", flat=True)
    )
    return [name for name in short_names if name not in fresh]


def _format(ref: dict[str, Any]) -> str:
    fmt = str(ref.get("format") or "")
    if fmt in Sticker.Format.values:
        return fmt
    return _FORMAT_BY_MIME.get(str(ref.get("mime") or "").lower(), Sticker.Format.STATIC)


def sticker_set_store(*, info: StickerSetInfo) -> dict[str, Any]:
    """Write a resolved set into the catalog: the set, its stickers in order, and drop stickers the
    set no longer has (the prompt must not offer a sticker that cannot be sent)."""
    with transaction.atomic():
        sticker_set, _ = StickerSet.objects.update_or_create(
            short_name=info.short_name, defaults={"title": info.title[:255], "fetched_at": now()}
        )
        kept = []
        for position, ref in enumerate(info.stickers):
            unique_id = ref.unique_id or f"{info.short_name}:{position}"
            kept.append(unique_id)
            document_id = ref.ref.get("document_id")
            access_hash = ref.ref.get("access_hash")
            Sticker.objects.update_or_create(
                sticker_set=sticker_set,
                unique_id=unique_id[:128],
                defaults={
                    "name": ref.name[:64],
                    "position": position,
                    "format": _format(ref.ref),
                    "mime": str(ref.ref.get("mime") or "")[:100],
                    "document_id": int(document_id) if document_id is not None else None,
                    "access_hash": int(access_hash) if access_hash is not None else None,
                    "premium": bool(ref.ref.get("premium")),
                },
            )
        removed, _ = Sticker.objects.filter(sticker_set=sticker_set).exclude(unique_id__in=kept).delete()
    return {
        "short_name": info.short_name,
        "title": info.title,
        "stickers": len(info.stickers),
        "removed": removed,
    }


async def sticker_set_import(*, transport: ChatTransport, short_name: str) -> dict[str, Any]:
    """Resolve a set through the transport and store it; returns what was stored."""
    info = await transport.resolve_sticker_set(short_name)
    return await sync_to_async(sticker_set_store)(info=info)
