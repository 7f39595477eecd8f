"""Media downloads: the bytes of received media, saved into the media store for describing and previews.

`llm.media.warm_media_descriptions` describes a media part only when the part has a `file` (relative
to MEDIA_ROOT). Nothing else fetches media from Telegram, so the gateway does it, right after ingest
and before the `received` node is dispatched (the worker reads the DB mirror):

- messages are scanned once, in id order, from a per-agent cursor (a first scan looks back
  `FIRST_SCAN_MESSAGES` messages);
- a part is fetched when it has a `unique_id`, no `file`, no earlier failure, and the catalog has no
  usable description (curated or ok) for it; a file already in the store for that id is reused;
  a voice note, audio file or video note longer than the transcription cap (5 minutes) is not fetched;
- a video, GIF or animation past `MEDIA_VIDEO_MAX_DURATION_SECONDS` is not fetched (it is never described);
- at most `MEDIA_DESC_BUDGET_PER_TICK` downloads per gateway pass; the cursor stops before the first
  message the budget did not cover;
- a failure is logged and written to the part (`download_error`), never raised: planning goes ahead.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from cindy_site.bulk import placeholders
from conversations.models import Conversation, Message
from conversations.transport.base import AuthError, FloodWait, PermanentError, Transport, TransportError
from llm.media_caps import video_too_long
from media_catalog.audio import is_transcribable, too_long
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaPartError, StoredMedia, media_items

logger = logging.getLogger(__name__)

#: Media files live under MEDIA_ROOT/<MEDIA_STORE>/<unique id><ext>.
MEDIA_STORE = "media_store"
SCAN_BATCH = 200
FIRST_SCAN_MESSAGES = 200


@dataclass(frozen=True)
class Wanted:
    message_pk: int
    peer_id: int
    message_id: int
    unique_id: str | None  # None: the message needs nothing, the cursor just moves past it


def _safe_name(unique_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", unique_id)[:120] or "media"


def store_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / MEDIA_STORE


def stored_file(unique_id: str) -> str | None:
    """The store's file for this unique id, relative to MEDIA_ROOT, if one was saved before."""
    for path in sorted(store_dir().glob(f"{_safe_name(unique_id)}.*")):
        if path.is_file():
            return path.relative_to(Path(settings.MEDIA_ROOT)).as_posix()
    return None


def media_cursor_start(*, agent_id: int) -> int:
    """Where a gateway's first scan of an agent starts: just before its last FIRST_SCAN_MESSAGES."""
    pks = list(
        Message.objects.filter(conversation__agent_id=agent_id)
        .order_by("-pk")
        .values_list("pk", flat=True)[:FIRST_SCAN_MESSAGES]
    )
    return pks[-1] - 1 if pks else 0


class MediaNews(NamedTuple):
    """What `media_agents_with_news` found: `agents` maps each agent with a message after its cursor
    to the id of its newest message when none of them carries media, else None; `top` is the newest
    message id the read looked at (every message of the agents up to it was read)."""

    agents: dict[int, int | None]
    top: int


def media_agents_with_news(*, cursors: dict[int, int]) -> MediaNews:
    """The agents (of `cursors`, agent id → media cursor) with a message after their cursor, up to the
    newest message stored now (`MediaNews`); `media_wanted` reads those with media.

    One grouped query for every agent, so an idle pass scans nobody (the gateway's media step), in
    plain SQL: the gateway asks it after every pass that stored messages and before every dispatch.
    It reads the messages after the lowest cursor; the media step moves the cursor of every agent with
    nothing new up to `top`, so an agent that gets no messages (its cursor would stay where its first
    scan started, 0 for an agent without any) does not make every later read scan every message
    stored since. A message without media stores its parts as `[]`; any other value (on a database
    that stores JSON otherwise, every value) counts as media, which only sends the agent to
    `media_wanted`.
    """
    if not cursors:
        return MediaNews({}, 0)
    q = connection.ops.quote_name
    messages, conversations = q(Message._meta.db_table), q(Conversation._meta.db_table)
    lower = min(cursors.values())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(id) FROM {messages}")  # noqa: S608
        top = cursor.fetchone()[0] or 0
        if top <= lower:
            return MediaNews({}, top)
        cursor.execute(
            f"SELECT c.agent_id, MAX(m.id), MAX(CASE WHEN m.media = '[]' THEN 0 ELSE 1 END) "  # noqa: S608
            f"FROM {messages} m INNER JOIN {conversations} c ON c.id = m.conversation_id "
            f"WHERE m.id > %s AND m.id <= %s AND c.agent_id IN ({placeholders(len(cursors))}) "
            "GROUP BY c.agent_id",
            [lower, top, *cursors],
        )
        newest = cursor.fetchall()
    agents = {agent_id: None if media else pk for agent_id, pk, media in newest if pk > cursors[agent_id]}
    return MediaNews(agents, top)


def media_wanted(*, agent_id: int, after_pk: int, limit: int = SCAN_BATCH) -> list[Wanted]:
    """Messages after the cursor, in id order, each with the first media part that needs its bytes."""
    rows = list(
        Message.objects.filter(conversation__agent_id=agent_id, pk__gt=after_pk)
        .order_by("pk")
        .values_list("pk", "conversation__peer_id", "message_id", "media", "deleted")[:limit]
    )
    parsed = {pk: _parts(pk, media) for pk, _peer, _message, media, _deleted in rows}
    unique_ids = {p.unique_id for items in parsed.values() for p in items if p.unique_id}
    usable = set(
        MediaDescription.objects.filter(unique_id__in=unique_ids)
        .filter(
            Q(status__in=[MediaDescription.Status.CURATED, MediaDescription.Status.OK])
            | Q(source=MediaDescription.Source.CURATED)
        )
        .values_list("unique_id", flat=True)
    )
    wanted = []
    for pk, peer_id, message_id, _media, deleted in rows:
        unique_id = None
        if not deleted:
            for part in parsed[pk]:
                if video_too_long(part):
                    continue  # never described: not worth its download
                if (
                    part.unique_id
                    and part.unique_id not in usable
                    and not part.file
                    and not part.download_error
                    and not (is_transcribable(part) and too_long(part))  # past the cap: never heard
                ):
                    unique_id = part.unique_id
                    break
        wanted.append(Wanted(pk, peer_id, message_id, unique_id))
    return wanted


def _parts(message_pk: int, media: list | None) -> list[StoredMedia]:
    """The message's parts; a malformed one is logged and its message skipped, so that one bad row
    does not stall every later download of the agent."""
    try:
        return media_items(media)
    except MediaPartError as exc:
        logger.warning("message %s: media not downloaded: %s", message_pk, exc)
        return []


def media_attach(*, message_pk: int, unique_id: str, file: str = "", error: str = "") -> None:
    """Write the stored file (or the failure) into the message's parts with this unique id."""
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=message_pk).first()
        if message is None:
            return
        parts = []
        for part in message.media or []:
            # The stored part is kept whole (a send's own keys too); only its file or failure is added.
            parsed = _parts(message_pk, [part])
            if parsed and parsed[0].unique_id == unique_id:
                part = {**part, "file": file} if file else {**part, "download_error": error[:300]}
            parts.append(part)
        Message.objects.filter(pk=message_pk).update(media=parts)


def _is_transient(exc: BaseException) -> bool:
    """A failure of the connection, not of this media: worth another try on a later pass."""
    if isinstance(exc, PermanentError) or isinstance(exc, FileNotFoundError):
        return False
    return isinstance(exc, (TransportError, ConnectionError, TimeoutError))


async def _fetch(transport: Transport, item: Wanted) -> str:
    """Download one message's media into the store; returns the path relative to MEDIA_ROOT."""
    incoming = await asyncio.to_thread(store_dir) / ".incoming"
    path = await transport.download_media(item.peer_id, item.message_id, incoming)
    if path is None or not Path(path).is_file():
        raise FileNotFoundError(f"message {item.message_id} in chat {item.peer_id} has no media to download")
    path = Path(path)
    target = (await asyncio.to_thread(store_dir)) / f"{_safe_name(item.unique_id or '')}{path.suffix.lower()}"
    await asyncio.to_thread(shutil.move, str(path), target)  # may copy across filesystems
    return target.relative_to(Path(settings.MEDIA_ROOT)).as_posix()


async def download_new_media(
    *, agent_id: int, transport: Transport, cursor: int, budget: int
) -> tuple[int, int]:
    """Fetch the media of messages after `cursor`; returns (new cursor, downloads spent)."""
    spent = 0
    for item in await sync_to_async(media_wanted)(agent_id=agent_id, after_pk=cursor):
        if item.unique_id is None:
            cursor = item.message_pk
            continue
        existing = await sync_to_async(stored_file)(item.unique_id)
        if existing:
            await sync_to_async(media_attach)(
                message_pk=item.message_pk, unique_id=item.unique_id, file=existing
            )
            cursor = item.message_pk
            continue
        if spent >= budget:
            break
        spent += 1
        try:
            relative = await _fetch(transport, item)
        except (FloodWait, AuthError) as exc:  # try again on a later pass; the ingest step handles auth
            logger.warning("agent %s: media download paused: %r", agent_id, exc)
            break
        except Exception as exc:
            if _is_transient(exc):
                # A dropped connection says nothing about the media: keep the cursor, try again later.
                logger.warning("agent %s: media download interrupted, will retry: %r", agent_id, exc)
                break
            logger.warning(
                "agent %s: could not download the media of message %s in chat %s: %r",
                agent_id,
                item.message_id,
                item.peer_id,
                exc,
            )
            await sync_to_async(media_attach)(
                message_pk=item.message_pk, unique_id=item.unique_id, error=f"{type(exc).__name__}: {exc}"
            )
        else:
            await sync_to_async(media_attach)(
                message_pk=item.message_pk, unique_id=item.unique_id, file=relative
            )
        cursor = item.message_pk
    return cursor, spent
