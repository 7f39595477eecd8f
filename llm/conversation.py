"""Conversation assembly: `Message` rows as ordered parts, the way the agent sees them.

Shared by prompt building and the dashboard. Media is rendered to compact text from the media catalog
only (`MediaDescription` rows); nothing here downloads media or asks for a description.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from conversations.models import Conversation, Message
from conversations.selectors import first_partner_message_id
from media_catalog.models import MediaDescription
from memory.services.summaries import summary_covered_id

#: Summarized messages the history still shows before the first unsummarized one, for continuity.
HISTORY_OVERLAP = 4

_DESCRIBED = {MediaDescription.Status.OK, MediaDescription.Status.CURATED}
_KIND_PHRASES = {
    "photo": "a photo",
    "gif": "a GIF",
    "animation": "an animation",
    "video": "a video",
    "voice": "a voice message",
    "audio": "an audio clip",
    "custom_emoji": "a custom emoji",
}


@dataclass(frozen=True)
class ChatMessage:
    """One message as the agent sees it: who said it and its ordered parts.

    Parts are dicts: {"kind": "header"|"text", "text": ...} and
    {"kind": "media", "media_kind": ..., "unique_id": ..., "rendered_text": ...}.
    """

    message_id: int
    is_agent: bool
    sender_id: int | None
    sender_name: str
    date: dt.datetime
    reply_to_id: int | None
    parts: tuple[dict[str, Any], ...]

    @property
    def text(self) -> str:
        """The parts as one prompt string, one part per line."""
        return "\n".join(part_text(p) for p in self.parts)


def agent_timezone(agent: Any) -> dt.tzinfo:
    """The agent's IANA zone, else the site's TIME_ZONE, else UTC (a bad name never stops a prompt)."""
    for name in (getattr(agent, "timezone", "") or "", settings.TIME_ZONE or "", "UTC"):
        if not name:
            continue
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            continue
    return dt.UTC


def part_text(part: dict[str, Any]) -> str:
    if part.get("kind") == "media":
        return part.get("rendered_text", "")
    return part.get("text", "")


@dataclass(frozen=True)
class HistoryStart:
    """Where the prompt's history starts: the first message id it may show (None: the beginning).

    `reason` says why: "summary" (after the last summarized message, with a small overlap),
    "first message" (Reset Context On First Message) or "" (no limit but the window cap).
    `covered` is the highest message id a summary covers.
    """

    message_id: int | None = None
    reason: str = ""
    covered: int | None = None


def visible_messages(conversation: Conversation):
    return Message.objects.filter(conversation=conversation, deleted=False)


def history_start(conversation: Conversation) -> HistoryStart:
    """The first message the prompt's history may show.

    1. With Reset Context On First Message, a DM's history starts at the partner's first visible
       message: what came before (the agent's own openers, a cleared chat) is not shown.
    2. With summaries, it starts HISTORY_OVERLAP messages before the end of the last summarized
       message, so the history and the summaries overlap a little. This start moves only when a
       summary is written, so the prompt prefix stays the same between two summarizations.
    """
    floor = None
    if conversation.agent.reset_context_on_first_message:
        floor = first_partner_message_id(conversation=conversation)
    covered = summary_covered_id(agent_id=conversation.agent_id, channel_id=conversation.peer_id)
    if covered is not None:
        rows = visible_messages(conversation).filter(message_id__lte=covered)
        if floor is not None:
            rows = rows.filter(message_id__gte=floor)
        overlap = list(rows.order_by("-message_id").values_list("message_id", flat=True)[:HISTORY_OVERLAP])
        start = overlap[-1] if overlap else covered + 1
        return HistoryStart(max(start, floor or start), "summary", covered)
    if floor is not None:
        return HistoryStart(floor, "first message")
    return HistoryStart()


def history_messages(
    conversation: Conversation, *, limit: int | None = None, start: HistoryStart | None = None
) -> list[Message]:
    """The newest messages of a conversation from its history start, oldest first, at most `limit`.

    The start is `history_start(conversation)`: after the summaries, or the partner's first message.
    When more messages than the cap (CINDY_HISTORY_SIZE) follow it, the window start moves in steps of
    CINDY_HISTORY_STEP messages (at most half the cap), so the window holds between cap - step + 1
    and cap messages: its first message then stays the same for `step` turns, which keeps the prompt
    prefix cacheable, and the prefix breaks once per step.
    """
    limit = limit or settings.CINDY_HISTORY_SIZE
    if start is None:
        start = history_start(conversation)
    visible = visible_messages(conversation)
    if start.message_id is not None:
        visible = visible.filter(message_id__gte=start.message_id)
    newest = list(visible.order_by("-message_id")[:limit])
    if len(newest) == limit:
        total = visible.count()
        step = history_step(limit)
        skip = (step - (total - limit) % step) % step
        newest = newest[: limit - skip] if skip else newest
    newest.sort(key=lambda m: (m.date, m.message_id))
    return newest


def history_step(limit: int | None = None) -> int:
    """How many messages the window start moves at a time: CINDY_HISTORY_STEP, at most half the cap."""
    limit = limit or settings.CINDY_HISTORY_SIZE
    return max(1, min(settings.CINDY_HISTORY_STEP, limit // 2))


def descriptions_for(messages: Iterable[Message]) -> dict[str, MediaDescription]:
    """The catalog rows for every media item in `messages`, in one query."""
    ids = {p.get("unique_id") for m in messages for p in (m.media or []) if p.get("unique_id")}
    if not ids:
        return {}
    return {d.unique_id: d for d in MediaDescription.objects.filter(unique_id__in=ids)}


def render_media(part: dict[str, Any], description: MediaDescription | None) -> str:
    """Compact text for one media part, e.g. ‹the sticker 😂 from the set NNNNun that appears as …›."""
    kind = part.get("media_kind") or "other"
    described = ""
    if description is not None and description.status in _DESCRIBED and description.description:
        described = " ".join(description.description.split())
    if kind == "sticker":
        name = part.get("sticker_name") or (description.sticker_name if description else "") or "?"
        set_name = part.get("sticker_set_name") or (description.sticker_set_name if description else "")
        text = f"the sticker {name}" + (f" from the set {set_name}" if set_name else "")
    elif kind in _KIND_PHRASES:
        text = _KIND_PHRASES[kind]
    elif kind == "document":
        file_name = part.get("file_name") or ""
        text = f"a file {file_name}".rstrip()
    else:
        return f"‹media of kind {kind}›"
    if described:
        text += f" that appears as {described}"
    return f"‹{text}›"


def header_text(message: Message, tz: dt.tzinfo) -> str:
    """The header of a non-agent message: sender, ids, reply-to and local time."""
    sender = message.sender_name or "unknown"
    bits = [f"message_id {message.message_id}", f"from {sender} (id {message.sender_id})"]
    if message.sender_username:
        bits[-1] = f"from {sender} (@{message.sender_username}, id {message.sender_id})"
    if message.reply_to_id:
        bits.append(f"reply to message_id {message.reply_to_id}")
    if message.forwarded_from:
        bits.append(f"forwarded from {message.forwarded_from}")
    bits.append(message.date.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z"))
    return "[" + " · ".join(bits) + "]"


def message_parts(
    message: Message, *, descriptions: dict[str, MediaDescription], tz: dt.tzinfo
) -> tuple[dict[str, Any], ...]:
    parts: list[dict[str, Any]] = []
    if not message.is_agent:
        parts.append({"kind": "header", "text": header_text(message, tz)})
    if message.text:
        parts.append({"kind": "text", "text": message.text})
    for media in message.media or []:
        unique_id = media.get("unique_id", "")
        parts.append(
            {
                "kind": "media",
                "media_kind": media.get("media_kind") or "other",
                "unique_id": unique_id,
                "rendered_text": render_media(media, descriptions.get(unique_id)),
            }
        )
    if message.is_agent and not parts:
        parts.append({"kind": "text", "text": "‹empty message›"})
    return tuple(parts)


def to_chat_messages(messages: Sequence[Message], *, tz: dt.tzinfo) -> list[ChatMessage]:
    descriptions = descriptions_for(messages)
    return [
        ChatMessage(
            message_id=m.message_id,
            is_agent=m.is_agent,
            sender_id=m.sender_id,
            sender_name=m.sender_name,
            date=m.date,
            reply_to_id=m.reply_to_id,
            parts=message_parts(m, descriptions=descriptions, tz=tz),
        )
        for m in messages
        if not (m.is_service and not m.text)
    ]


def conversation_history(
    conversation: Conversation, *, limit: int | None = None, start: HistoryStart | None = None
) -> list[ChatMessage]:
    """The conversation as the agent sees it, oldest first, from its history start (see
    `history_start`), capped at `limit` (CINDY_HISTORY_SIZE)."""
    messages = history_messages(conversation, limit=limit, start=start)
    return to_chat_messages(messages, tz=agent_timezone(conversation.agent))
