"""Reads of what an agent's account may send beyond its configured sticker sets (`StickerAccess`), and of
the sticker sets the agent form offers, and of its library."""

from __future__ import annotations

from typing import Any

from django.db import connection

from cindy_site import rows
from cindy_site.lookups import Ids
from media_catalog.models import LibraryItem, MediaDescription, MediaKind, StickerAccess, StickerSet


def saved_stickers_of(*, agent_id: int) -> list[dict[str, Any]]:
    """The stickers in the account's Saved Messages (`{"set", "name", "unique_id"}`), as the gateway
    last listed them."""
    access = StickerAccess.objects.filter(agent_id=agent_id).first()
    return [s for s in access.saved_stickers if isinstance(s, dict)] if access else []


def saved_stickers_by_agent(*, agent_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """`saved_stickers_of` for several agents in one query (an agent never listed: no stickers)."""
    found = {agent_id: [] for agent_id in agent_ids}
    for agent_id, saved in StickerAccess.objects.filter(agent_id__in_ids=Ids(agent_ids)).values_list(
        "agent_id", "saved_stickers"
    ):
        found[agent_id] = [s for s in saved or [] if isinstance(s, dict)]
    return found


def may_send_premium(*, agent_id: int) -> bool:
    """Whether the agent's account may send premium stickers (an account never seen: no)."""
    return StickerAccess.objects.filter(agent_id=agent_id, premium=True).exists()


def sticker_set_choices() -> dict[str, str]:
    """Sticker sets the media catalog knows: imported from Telegram, or named by descriptions."""
    labels = {s.short_name: s.title or s.short_name for s in StickerSet.objects.all()}
    described = (
        MediaDescription.objects.filter(kind=MediaKind.STICKER)
        .exclude(sticker_set_name="")
        .values_list("sticker_set_name", "sticker_set_title")
        .distinct()
    )
    for name, title in described:
        labels.setdefault(name, title or name)
    return {name: name if title == name else f"{name} · {title}" for name, title in labels.items()}


def sticker_access_of(*, agent_id: int) -> StickerAccess | None:
    """The account's sticker access row (None: never listed). Plain SQL: read by every planned turn
    before its LLM request (llm/prompt/sections.py); the ORM query cost about 0.2 ms of CPU against
    0.02 ms through the cursor (measured as cindy_site/rows.py says)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(StickerAccess, 's')} FROM {rows.table(StickerAccess)} s "  # noqa: S608
            "WHERE s.agent_id = %s LIMIT 1",
            [agent_id],
        )
        row = cursor.fetchone()
    return rows.from_row(StickerAccess, row) if row else None


def library_items_of(*, agent_id: int) -> list[LibraryItem]:
    """The agent's library items by unique id. Plain SQL: read by every planned turn before its LLM
    request, as `sticker_access_of` says why."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(LibraryItem, 'i')} FROM {rows.table(LibraryItem)} i "  # noqa: S608
            "WHERE i.agent_id = %s ORDER BY i.unique_id",
            [agent_id],
        )
        return [rows.from_row(LibraryItem, row) for row in cursor.fetchall()]


def library_picture_choices(agent: Any) -> list[tuple[str, str]]:
    """The agent's library pictures that can become its profile photo, as (unique id, label): photos
    with a file (sandbox uploads, pictures the agent made) or a Saved Messages message (Telegram)."""
    if getattr(agent, "pk", None) is None:
        return []
    items = LibraryItem.objects.filter(agent_id=agent.pk, kind=MediaKind.PHOTO).order_by("unique_id")
    choices = []
    for item in items:
        if not item.file and item.saved_message_id is None:
            continue
        text = " ".join(item.description.split())
        label = f"{item.unique_id}: {text[:80]}{'…' if len(text) > 80 else ''}" if text else item.unique_id
        choices.append((item.unique_id, label))
    return choices
