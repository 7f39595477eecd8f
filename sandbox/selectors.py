"""Reads of the sandbox, shared by the dashboard's sandbox page and the REST API.

Rows are plain, JSON-ready dicts. Media parts are left to the caller: where a picture or a voice
note is served from is the web face's business (`dashboard.selectors.sandbox_message_row`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from agents.models import Agent
from cindy_site import rows
from media_catalog.models import MediaDescription, Sticker
from sandbox.models import SandboxChat, SandboxMember, SandboxMessage, SandboxUpdate, SandboxUser


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


def sandbox_chats_within(
    chats: QuerySet[SandboxChat], within: Collection[int] | None
) -> QuerySet[SandboxChat]:
    """`chats` narrowed to those whose every agent member is one of the agent ids `within` (None:
    every chat): the chats a caller who may see those agents may find, read and write in."""
    if within is None:
        return chats
    beyond = (
        SandboxMember.objects.filter(user__agent__isnull=False)
        .exclude(user__agent_id__in=list(within))
        .values("chat_id")
    )
    return chats.exclude(pk__in=beyond)


def sandbox_chat_of(*, agent: Agent, chat_id: int, within: Collection[int] | None) -> SandboxChat | None:
    """The sandbox chat with this id when the agent is in it and it is within the caller's grants."""
    chats = SandboxChat.objects.filter(pk=chat_id, members__agent=agent)
    return sandbox_chats_within(chats, within).first()


def sandbox_group_titles(*, agent: Agent, within: Collection[int] | None = None) -> list[str]:
    """Titles of the sandbox groups the agent's sandbox identity belongs to, within the caller's
    grants (`within`, see `sandbox_chats_within`)."""
    groups = SandboxChat.objects.filter(kind=SandboxChat.Kind.GROUP, members__agent=agent)
    groups = sandbox_chats_within(groups, within)
    return list(groups.exclude(title="").order_by("title").values_list("title", flat=True).distinct())


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


# --- the update poll: plain SQL ------------------------------------------------------------------
#
# A gateway asks `SandboxTransport.with_updates` at every pass, for all its sandbox agents at once,
# and polls each agent that has something. These reads are written as plain SQL through the
# connection's cursor: the ORM's queryset building and compiling cost about ten times what the
# statement itself costs (see each docstring). Figures are CPU
# time per call, the mean of 2,000 calls on SQLite against a log of 20 updates in 5 chats, on a busy
# 2-core machine (their ratio is what counts). Names are quoted by the backend, values are parameters.


def _in(values: Sequence[Any]) -> str:
    """`%s, %s, ...`: the parameter markers of an SQL `IN (...)` list of `values`."""
    return ", ".join(["%s"] * len(values))


def _tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(SandboxUpdate._meta.db_table), quote(SandboxMember._meta.db_table)


def sandbox_update_window_stamp(*, floor: int, recent: dt.datetime) -> tuple[int, int | None]:
    """(row count, newest id) of the update log's window: ids above `floor` or created since `recent`.

    Asked at every gateway pass: when neither moved, no transport has anything new. Measured: ORM
    `filter(...).aggregate(Count, Max)` 0.96 ms CPU, this 0.10 ms.
    """
    updates, _ = _tables()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*), MAX(u.id) FROM {updates} u WHERE u.id > %s OR u.created >= %s",  # noqa: S608
            [floor, connection.ops.adapt_datetimefield_value(recent)],
        )
        count, newest = cursor.fetchone()
    return int(count), newest


def sandbox_update_window(*, floor: int, recent: dt.datetime) -> list[tuple[int, int, str, int | None, bool]]:
    """The window's updates as (id, chat id, kind, actor id, created since `recent`), by the id and
    `created` indexes. Read when the window moved (see `sandbox_update_window_stamp`). Measured: ORM
    `values_list` with the same CASE annotation 1.76 ms CPU, this 0.10 ms."""
    updates, _ = _tables()
    stamp = connection.ops.adapt_datetimefield_value(recent)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT u.id, u.chat_id, u.kind, u.actor_id, CASE WHEN u.created >= %s THEN 1 ELSE 0 END "  # noqa: S608
            f"FROM {updates} u WHERE u.id > %s OR u.created >= %s",
            [stamp, floor, stamp],
        )
        return [
            (i, chat, kind, actor, bool(is_recent)) for i, chat, kind, actor, is_recent in cursor.fetchall()
        ]


def sandbox_members_among(*, chat_ids: Sequence[int], user_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(chat id, user id) of the members among `user_ids` of the chats `chat_ids` (none if either is
    empty). Read with the window at every gateway pass that found it moved. Measured: ORM
    `values_list` 0.69 ms CPU, this 0.07 ms."""
    if not chat_ids or not user_ids:
        return []
    _, members = _tables()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT chat_id, user_id FROM {members} "  # noqa: S608
            f"WHERE chat_id IN ({_in(chat_ids)}) AND user_id IN ({_in(user_ids)})",
            [*chat_ids, *user_ids],
        )
        return [(chat_id, user_id) for chat_id, user_id in cursor.fetchall()]


def sandbox_poll_update_ids(*, user_id: int, floor: int, recent: dt.datetime, limit: int) -> list[int]:
    """The ids of the window's updates (ids above `floor`, or created since `recent`) in the chats of
    the sandbox user `user_id`, oldest first, at most `limit`: not its own typing, and no other
    account's unread mark. The first read of every poll (`SandboxTransport.poll_updates`).

    Measured: the ORM query (`chat__members=...` with two `exclude`s) 2.27 ms CPU, this 0.10 ms.
    """
    updates, members = _tables()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT u.id FROM {updates} u INNER JOIN {members} m ON m.chat_id = u.chat_id "  # noqa: S608
            "WHERE m.user_id = %s AND (u.id > %s OR u.created >= %s) "
            # One's own typing is no update for oneself; an unread mark is the marking account's alone.
            "AND NOT (u.kind = %s AND u.actor_id IS NOT NULL AND u.actor_id = %s) "
            "AND (u.kind <> %s OR u.actor_id = %s) "
            "ORDER BY u.id LIMIT %s",
            [
                user_id,
                floor,
                connection.ops.adapt_datetimefield_value(recent),
                SandboxUpdate.Kind.TYPING.value,
                user_id,
                SandboxUpdate.Kind.UNREAD_MARK.value,
                user_id,
                limit,
            ],
        )
        return [row[0] for row in cursor.fetchall()]


def sandbox_dm_partner(*, chat_id: int, me_id: int) -> SandboxUser | None:
    """The other member of a sandbox DM (by name, then id), or None: the sender of every inbound
    message the transport hands the gateway (`SandboxTransport._partner_of`), read for each batch.
    Measured: the ORM query (`chats=` with an `exclude`, ordered) 0.9 ms CPU, this 0.05 to 0.09 ms."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(SandboxUser, 'u')} FROM {rows.table(SandboxUser)} u "  # noqa: S608
            f"INNER JOIN {rows.table(SandboxMember)} m ON m.user_id = u.id WHERE m.chat_id = %s AND u.id <> %s "
            "ORDER BY u.name, u.id LIMIT 1",
            [chat_id, me_id],
        )
        row = cursor.fetchone()
    return rows.from_row(SandboxUser, row) if row else None


def sandbox_newest_message_ids(*, chat_ids: Sequence[int]) -> dict[int, int]:
    """Each chat's newest message id that is not deleted (chats without one are left out): read for
    every history batch the gateway asks after an inbound message (`sandbox.transport.batch`).
    Measured: the ORM query (`values().annotate(Max)`) 0.7 ms CPU, this 0.03 ms."""
    if not chat_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m.chat_id, MAX(m.message_id) FROM {rows.table(SandboxMessage)} m "  # noqa: S608
            f"WHERE m.chat_id IN ({_in(chat_ids)}) AND m.deleted = %s GROUP BY m.chat_id",
            [*chat_ids, False],
        )
        return {chat_id: newest for chat_id, newest in cursor.fetchall()}


def sandbox_members_to_read(*, chat_ids: Sequence[int], user_ids: Sequence[int]) -> list[tuple]:
    """(pk, chat id, user id, read up to, unread mark) of the members among `user_ids` of the chats
    `chat_ids`, by pk, locked for update where the database can (inside the caller's transaction):
    the first read of every batch of read marks (`sandbox.transport.batch`). Measured: the ORM query
    (`select_for_update().values_list`) 0.7 ms CPU, this 0.03 ms."""
    if not chat_ids or not user_ids:
        return []
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.id, s.chat_id, s.user_id, s.read_up_to, s.unread_mark "  # noqa: S608
            f"FROM {rows.table(SandboxMember)} s WHERE s.chat_id IN ({_in(chat_ids)}) "
            f"AND s.user_id IN ({_in(user_ids)}) ORDER BY s.id{lock}",
            [*chat_ids, *user_ids],
        )
        return [(pk, chat, user, read, bool(marked)) for pk, chat, user, read, marked in cursor.fetchall()]


def sandbox_own_reactions(*, chat_ids: Sequence[int], sender_ids: Sequence[int], up_to: int) -> list[tuple]:
    """(pk, chat id, sender id, message id, reactions) of the messages that `sender_ids` sent in the
    chats `chat_ids` up to message id `up_to` and that carry reactions, by pk: read with every batch
    of read marks (`sandbox.transport.batch`: reading a chat reads the reactions on the account's own
    messages). A message without reactions stores `[]` (the field's default, as `json.dumps` writes
    it); the caller looks at each reaction, so a row this read keeps needlessly costs nothing.
    Measured: the ORM query (`exclude(reactions=[]).values_list`) 0.6 ms CPU, this 0.05 ms."""
    if not chat_ids or not sender_ids:
        return []
    names = ("id", "chat_id", "sender_id", "message_id", "reactions")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, m.chat_id, m.sender_id, m.message_id, m.reactions "  # noqa: S608
            f"FROM {rows.table(SandboxMessage)} m WHERE m.chat_id IN ({_in(chat_ids)}) "
            f"AND m.sender_id IN ({_in(sender_ids)}) AND m.message_id <= %s AND m.reactions <> %s ORDER BY m.id",
            [*chat_ids, *sender_ids, up_to, "[]"],
        )
        found = cursor.fetchall()
    return [tuple(rows.convert(SandboxMessage, row, names=names)) for row in found]


def sandbox_updates_with_chats(*, update_ids: Sequence[int]) -> list[SandboxUpdate]:
    """The updates `update_ids`, oldest first, each with its chat (as `select_related("chat")`): the
    rows of every poll that found something new (`sandbox.transport.updates`). Measured (3 updates): the
    ORM query 0.64 ms CPU, this 0.11 to 0.17 ms."""
    if not update_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(SandboxUpdate, 'u')}, {rows.columns(SandboxChat, 'c')} "  # noqa: S608
            f"FROM {rows.table(SandboxUpdate)} u INNER JOIN {rows.table(SandboxChat)} c ON c.id = u.chat_id "
            f"WHERE u.id IN ({_in(update_ids)}) ORDER BY u.id",
            list(update_ids),
        )
        found = cursor.fetchall()
    split = rows.width(SandboxUpdate)
    updates = []
    for row in found:
        update = rows.from_row(SandboxUpdate, row[:split])
        update.chat = rows.from_row(SandboxChat, row[split:])
        updates.append(update)
    return updates


def sandbox_message_with_sender(*, chat_id: int, message_id: int) -> SandboxMessage | None:
    """The chat's message `message_id` with its sender (as `select_related("sender")`), or None: read
    for each new, edited or deleted message a poll hands over (`sandbox.transport.updates`).
    Measured: the ORM query 0.85 ms CPU, this 0.08 ms."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(SandboxMessage, 'm')}, {rows.columns(SandboxUser, 's')} "  # noqa: S608
            f"FROM {rows.table(SandboxMessage)} m INNER JOIN {rows.table(SandboxUser)} s ON s.id = m.sender_id "
            "WHERE m.chat_id = %s AND m.message_id = %s ORDER BY m.id LIMIT 1",
            [chat_id, message_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    split = rows.width(SandboxMessage)
    message = rows.from_row(SandboxMessage, row[:split])
    message.sender = rows.from_row(SandboxUser, row[split:])
    return message
