"""Reads of what an agent's account may send beyond its configured sticker sets (`StickerAccess`)."""

from __future__ import annotations

from typing import Any

from media_catalog.models import StickerAccess


def saved_stickers_of(*, agent_id: int) -> list[dict[str, Any]]:
    """The stickers in the account's Saved Messages (`{"set", "name", "unique_id"}`), as the gateway
    last listed them."""
    access = StickerAccess.objects.filter(agent_id=agent_id).first()
    return [s for s in access.saved_stickers if isinstance(s, dict)] if access else []


def may_send_premium(*, agent_id: int) -> bool:
    """Whether the agent's account may send premium stickers (an account never seen: no)."""
    return StickerAccess.objects.filter(agent_id=agent_id, premium=True).exists()
