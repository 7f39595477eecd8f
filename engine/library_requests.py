"""The `save_to_library` gateway request: an operator saved a chat's photo, sticker or GIF to a
Telegram agent's library (conversations/services/media_save.py). The gateway sends that media to the
account's Saved Messages (`Transport.save_to_library`), then lists Saved Messages again, as the
library refresh does, so the item is in the library when the request is done."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from agents.models import GatewayRequest
from conversations.transport.base import Transport
from engine.stickers import sticker_access_record_saved
from media_catalog.models import LibraryItem, MediaDescription
from media_catalog.services.library import library_sync_saved


def _describe(*, agent_id: int, unique_id: str, text: str) -> None:
    """The new item's description: the catalog's curated text (an operator may have edited it since
    the request was made), else the request's."""
    curated = (
        MediaDescription.objects.filter(unique_id=unique_id, source=MediaDescription.Source.CURATED)
        .values_list("description", flat=True)
        .first()
    )
    text = (curated or text).strip()
    if text:
        LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id, description="").update(
            description=text
        )


async def save_to_library(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    peer_id, unique_id = int(params["peer_id"]), str(params["unique_id"])
    done = await transport.save_to_library(peer_id, int(params["message_id"]), unique_id)
    saved = await transport.saved_media()
    await sync_to_async(library_sync_saved)(agent_id=request.agent_id, saved=saved)
    await sync_to_async(sticker_access_record_saved)(agent_id=request.agent_id, saved=saved)
    text = str(params.get("description", ""))
    await sync_to_async(_describe)(agent_id=request.agent_id, unique_id=unique_id, text=text)
    return {
        "peer_id": peer_id,
        "unique_id": unique_id,
        "saved_message_id": done.item.saved_message_id,
        "already": done.already,
    }
