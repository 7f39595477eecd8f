"""Reads of the sandbox, shared by the dashboard's sandbox page and the REST API.

Rows are plain, JSON-ready dicts. Media parts are left to the caller: where a picture or a voice
note is served from is the web face's business (`dashboard.selectors.sandbox_message_row`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import QuerySet

from agents.models import Agent
from media_catalog.models import MediaDescription, Sticker
from sandbox.models import SandboxChat, SandboxMessage


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value else None


def sandbox_message_row(message: SandboxMessage) -> dict[str, Any]:
    """A message as the sandbox chat shows it, without its media parts."""
    sender = message.sender
    return {
        "chat_id": message.chat_id,
        "message_id": message.message_id,
        "sender": sender.name,
        "sender_user_id": sender.user_id,
        "from_agent": sender.agent_id is not None,
        "date": _iso(message.date),
        "text": message.text,
        "reply_to_id": message.reply_to_id,
        "topic_id": message.topic_id,
        "reactions": message.reactions,
        "edited": message.edited,
        "deleted": message.deleted,
    }


def sandbox_chat_messages(*, chat: SandboxChat | None) -> QuerySet[SandboxMessage]:
    """A chat's messages, oldest first, with their senders (none for no chat)."""
    if chat is None:
        return SandboxMessage.objects.none()
    return SandboxMessage.objects.filter(chat=chat).select_related("sender").order_by("message_id")


def sandbox_group_titles(*, agent: Agent) -> list[str]:
    """Titles of the sandbox groups the agent's sandbox identity belongs to."""
    return list(
        SandboxChat.objects.filter(kind=SandboxChat.Kind.GROUP, members__agent=agent)
        .exclude(title="")
        .order_by("title")
        .values_list("title", flat=True)
        .distinct()
    )


def agent_stickers(*, agent: Agent) -> list[dict[str, Any]]:
    """The stickers of the agent's sets, with their curated or generated descriptions."""
    stickers = list(
        Sticker.objects.select_related("sticker_set")
        .filter(sticker_set__short_name__in=agent.sticker_set_names or [])
        .order_by("sticker_set__short_name", "position", "id")
    )
    descriptions = dict(
        MediaDescription.objects.filter(unique_id__in=[s.unique_id for s in stickers]).values_list(
            "unique_id", "description"
        )
    )
    return [
        {
            "value": f"{s.sticker_set.short_name}::{s.name}",
            "set": s.sticker_set.short_name,
            "set_title": s.sticker_set.title,
            "name": s.name,
            "unique_id": s.unique_id,
            "format": s.format,
            "description": descriptions.get(s.unique_id) or "",
        }
        for s in stickers
    ]
