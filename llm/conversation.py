"""Conversation assembly: `Message` rows as ordered parts, the way the agent sees them.

Shared by prompt building and the dashboard. Media is rendered to compact text from the media catalog
only (`MediaDescription` rows); nothing here downloads media or asks for a description.

Rendering a 500-message history is most of a prompt's assembly time, and from one turn to the next
only the newest messages differ. `history_window` therefore reads the window's rows as the database
driver returns them (no model instances) and keeps each rendered message in a process-wide cache keyed
by everything its rendering reads: the row's values, the agent's zone and the catalog rows of its
media. An edit, a re-delivery that changes a name, or a new media description gives a new key, so a
stale rendering is never served; only rows without a cached rendering are converted and rendered.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import zoneinfo
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.conf import settings

from cindy_site.parameters import parameter
from cindy_site.rows import convert as convert_row
from conversations.models import Conversation, Message
from conversations.selectors import first_partner_message_id, message_window_rows
from llm.media_caps import video_too_long
from llm.request import Part, Turn
from llm.transcription import render_audio, transcript_fields
from media_catalog.audio import is_transcribable
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem, media_items
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
    forwarded_from: str = ""
    #: The message's media items as stored (for describing them), not the rendered parts.
    media: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    #: False for a service message without text: it is part of the window but the prompt skips it.
    in_prompt: bool = True

    @property
    def text(self) -> str:
        """The parts as one prompt string, one part per line."""
        return "\n".join(part_text(p) for p in self.parts)

    @cached_property
    def turn(self) -> Turn:
        """The message as one turn of a request (built once per rendering, which the cache keeps)."""
        return Turn(
            role="agent" if self.is_agent else "user",
            parts=tuple(Part(text=part_text(p)) for p in self.parts),
        )


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
    covered = summary_covered_id(
        agent_id=conversation.agent_id, channel_id=conversation.peer_id, topic_id=conversation.topic_id
    )
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
    When more messages than the cap (CINDY_HISTORY_SIZE) follow it, the window start moves in steps
    (`history_step`: CINDY_HISTORY_STEP, by default a quarter of the cap), so the window holds between
    cap - step + 1 and cap messages: its first message then stays the same for `step` turns, which
    keeps the prompt prefix cacheable, and the prefix breaks once per step. The window's first message
    is kept on the conversation (`history_window_start_id`) and moved only when the window overflows,
    so a turn reads at most the cap and one row, however long the chat: nothing counts its messages.
    """
    visible = visible_messages(conversation)

    def fetch(since: int | None, count: int) -> list:
        window = visible if since is None else visible.filter(message_id__gte=since)
        return list(window.order_by("-message_id")[:count])

    newest = _window(conversation, limit=limit, start=start, fetch=fetch)
    newest.sort(key=lambda m: (m.date, m.message_id))
    return newest


def _window(
    conversation: Conversation,
    *,
    limit: int | None,
    start: HistoryStart | None,
    fetch: Callable[[int | None, int], list],
) -> list:
    """The window's rows, newest first: `fetch(since, count)` reads at most `count` visible messages
    from message id `since` on (None: from the first), newest first (see history_messages)."""
    limit = limit or parameter("CINDY_HISTORY_SIZE")
    if start is None:
        start = history_start(conversation)
    anchor = conversation.history_window_start_id
    anchored = anchor is not None and (start.message_id is None or anchor >= start.message_id)
    # One row more than the cap says whether the window overflowed, without counting the chat.
    if anchored:  # the window's start as the previous overflow set it
        newest = fetch(anchor, limit + 1)
        if len(newest) < limit - history_step(limit) + 1:
            # Fewer than a full window holds: the cap grew (CINDY_HISTORY_SIZE raised), so the stored
            # start cuts the window short. Read it again from the history's start, once.
            newest = fetch(start.message_id, limit + 1)
            if len(newest) <= limit:
                Conversation.objects.filter(pk=conversation.pk).update(history_window_start_id=None)
                conversation.history_window_start_id = None
    else:
        newest = fetch(start.message_id, limit + 1)
    if len(newest) > limit:
        keep = limit - history_step(limit) + 1
        newest = newest[:keep]
        first = _row_message_id(newest[-1])
        if first != conversation.history_window_start_id:
            Conversation.objects.filter(pk=conversation.pk).update(history_window_start_id=first)
            conversation.history_window_start_id = first
    return newest


def _row_message_id(row: Any) -> int:
    return row.message_id if isinstance(row, Message) else row[_ROW_FIELDS.index("message_id")]


def history_step(limit: int | None = None) -> int:
    """How many messages the window start moves at a time: CINDY_HISTORY_STEP, or a quarter of the cap
    when it is 0 (the default), at most half the cap."""
    limit = limit or parameter("CINDY_HISTORY_SIZE")
    return max(1, min(settings.CINDY_HISTORY_STEP or limit // 4, limit // 2))


def descriptions_for(messages: Iterable[Message]) -> dict[str, MediaDescription]:
    """The catalog rows for every media item in `messages`, in one query."""
    ids = {p.unique_id for m in messages for p in media_items(m.media) if p.unique_id}
    if not ids:
        return {}
    return {d.unique_id: d for d in MediaDescription.objects.filter(unique_id__in=ids)}


def render_media(part: MediaItem, description: MediaDescription | None, *, speaker: str = "") -> str:
    """Compact text for one media part, e.g. ‹the sticker 😂 from the set NNNNun that appears as …›;
    a voice note, audio or video note as its transcript (llm.transcription)."""
    kind = part.media_kind or "other"
    own = part.transcript if kind == "voice" else ""
    if is_transcribable(part) and not own:
        return render_audio(part, description, speaker=speaker)
    described = ""
    if description is not None and description.status in _DESCRIBED and description.description:
        described = " ".join(description.description.split())
    if not described and (note := video_too_long(part)):
        return f"‹{note}›"
    if kind == "sticker":
        name = part.sticker_name or (description.sticker_name if description else "") or "?"
        set_name = part.sticker_set_name or (description.sticker_set_name if description else "")
        text = f"the sticker {name}" + (f" from the set {set_name}" if set_name else "")
    elif kind in _KIND_PHRASES:
        text = _KIND_PHRASES[kind]
    elif kind == "document":
        text = f"a file {part.file_name}".rstrip()
    else:
        return f"‹media of kind {kind}›"
    if described:
        text += f" that appears as {described}"
    if own:  # one of the agent's own voice notes: what it said
        text += f" saying: {' '.join(own.split())}"
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
    for media in media_items(message.media):
        description = descriptions.get(media.unique_id)
        rendered = {
            "kind": "media",
            "media_kind": media.media_kind or "other",
            "unique_id": media.unique_id,
        }
        if is_transcribable(media):  # heard media: the transcript, its speaker, duration and language
            speaker = message.sender_name or ("you" if message.is_agent else "unknown")
            rendered |= transcript_fields(media, description, speaker=speaker)
            rendered["rendered_text"] = render_media(media, description, speaker=speaker)
        else:
            rendered["rendered_text"] = render_media(media, description)
        parts.append(rendered)
    if message.is_agent and not parts:
        parts.append({"kind": "text", "text": "‹empty message›"})
    return tuple(parts)


def to_chat_messages(messages: Sequence[Message], *, tz: dt.tzinfo) -> list[ChatMessage]:
    descriptions = descriptions_for(messages)
    return [
        _chat_message(m, descriptions=descriptions, tz=tz)
        for m in messages
        if not (m.is_service and not m.text)
    ]


def conversation_history(
    conversation: Conversation, *, limit: int | None = None, start: HistoryStart | None = None
) -> list[ChatMessage]:
    """The conversation as the agent sees it, oldest first, from its history start (see
    `history_start`), capped at `limit` (CINDY_HISTORY_SIZE)."""
    return [m for m in history_window(conversation, limit=limit, start=start) if m.in_prompt]


#: The fields a message's rendering reads, in the order of the cache key's row.
_ROW_FIELDS = (
    "id",
    "message_id",
    "is_agent",
    "sender_id",
    "sender_name",
    "sender_username",
    "date",
    "text",
    "reply_to_id",
    "media",
    "forwarded_from",
    "is_service",
    "edited_at",
)
_MEDIA_AT = _ROW_FIELDS.index("media")
#: Rendered messages kept per process (about a kilobyte each); the cache starts over when it is full.
#: 0 turns it off (bench/bench_request.py measures with and without it).
RENDER_CACHE_SIZE = 10_000
_rendered: dict[tuple, ChatMessage] = {}
_rendered_lock = threading.Lock()


def history_window(
    conversation: Conversation, *, limit: int | None = None, start: HistoryStart | None = None
) -> list[ChatMessage]:
    """Every message of the history window (`history_messages`' rule) as the agent sees it, oldest
    first, service messages without text included (`in_prompt` False), rendered through the cache."""

    def fetch(since: int | None, count: int) -> list:
        return message_window_rows(
            conversation_id=conversation.pk, since_message_id=since, count=count, fields=_ROW_FIELDS
        )

    rows = _window(conversation, limit=limit, start=start, fetch=fetch)
    tz = agent_timezone(conversation.agent)
    media_ids = [_media_ids(row[_MEDIA_AT]) for row in rows]
    wanted = {uid for ids in media_ids for uid in ids}
    descriptions = (
        {d.unique_id: d for d in MediaDescription.objects.filter(unique_id__in=wanted)} if wanted else {}
    )
    tz_key = str(tz)
    keys = [
        (row, tz_key, tuple(_description_key(descriptions.get(uid)) for uid in ids))
        for row, ids in zip(rows, media_ids, strict=True)
    ]
    caching = RENDER_CACHE_SIZE > 0
    found = [_rendered.get(key) for key in keys] if caching else [None] * len(keys)
    missing = [i for i, hit in enumerate(found) if hit is None]
    if missing:
        converted = [convert_row(Message, rows[i], names=_ROW_FIELDS) for i in missing]
        for i, values in zip(missing, converted, strict=True):
            message = Message(**dict(zip(_ROW_FIELDS, values, strict=True)))
            found[i] = _chat_message(message, descriptions=descriptions, tz=tz)
        if caching:
            with _rendered_lock:
                if len(_rendered) + len(missing) > RENDER_CACHE_SIZE:
                    _rendered.clear()
                _rendered.update((keys[i], found[i]) for i in missing)
    found.sort(key=lambda m: (m.date, m.message_id))
    return found


def _media_ids(raw: Any) -> tuple[str, ...]:
    """The unique ids of a row's media, from the column as the driver returns it."""
    if raw is None or raw in ("[]", b"[]", "", []):
        return ()
    items = json.loads(raw) if isinstance(raw, str | bytes) else raw
    return tuple(p.get("unique_id", "") for p in items or [] if isinstance(p, dict) and p.get("unique_id"))


def _description_key(description: MediaDescription | None) -> tuple | None:
    if description is None:
        return None
    return (
        description.status,
        description.description,
        description.sticker_name,
        description.sticker_set_name,
        description.language,
        description.duration,
    )


def _chat_message(
    message: Message, *, descriptions: dict[str, MediaDescription], tz: dt.tzinfo
) -> ChatMessage:
    return ChatMessage(
        message_id=message.message_id,
        is_agent=message.is_agent,
        sender_id=message.sender_id,
        sender_name=message.sender_name,
        date=message.date,
        reply_to_id=message.reply_to_id,
        parts=message_parts(message, descriptions=descriptions, tz=tz),
        forwarded_from=message.forwarded_from,
        media=tuple(message.media or ()),
        in_prompt=not (message.is_service and not message.text),
    )
