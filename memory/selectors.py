"""Reads of memory rows that every turn runs, in plain SQL.

Each is asked once or more per inbound message or planned turn; built through the ORM such a read
costs about 0.2 ms of CPU (building and compiling the queryset), through the cursor about 0.015 ms
(measured as cindy_site/rows.py says).
"""

from __future__ import annotations

import datetime as dt

from django.db import connection

from cindy_site import rows
from memory.models import ScheduleEntry, Summary


def schedule_entry_covering(*, agent_id: int, at: dt.datetime) -> ScheduleEntry | None:
    """The agent's schedule entry covering `at` (the earliest started), if any. Per message a turn
    answers (engine/responsiveness.py)."""
    q = connection.ops.quote_name
    when = connection.ops.adapt_datetimefield_value(at)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(ScheduleEntry, 's')} FROM {rows.table(ScheduleEntry)} s "  # noqa: S608
            f"WHERE s.agent_id = %s AND s.{q('start')} <= %s AND s.{q('end')} > %s "
            f"ORDER BY s.{q('start')}, s.id LIMIT 1",
            [agent_id, when, when],
        )
        row = cursor.fetchone()
    return rows.from_row(ScheduleEntry, row) if row else None


def schedule_entries_ahead(*, agent_id: int, at: dt.datetime, limit: int = 2) -> list[ScheduleEntry]:
    """The agent's first `limit` schedule entries ending after `at`, by start. Per planned turn
    (the prompt's current activity, llm/prompt/builder.py)."""
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(ScheduleEntry, 's')} FROM {rows.table(ScheduleEntry)} s "  # noqa: S608
            f"WHERE s.agent_id = %s AND s.{q('end')} > %s ORDER BY s.{q('start')} LIMIT %s",
            [agent_id, connection.ops.adapt_datetimefield_value(at), int(limit)],
        )
        return [rows.from_row(ScheduleEntry, row) for row in cursor.fetchall()]


def summary_covered_id(*, agent_id: int, channel_id: int, topic_id: int = 0) -> int | None:
    """The highest message id a summary of this channel covers (None without summaries). Per
    planned turn."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT last_message_id FROM {rows.table(Summary)} "  # noqa: S608
            "WHERE agent_id = %s AND channel_id = %s AND topic_id = %s AND last_message_id IS NOT NULL "
            "ORDER BY last_message_id DESC LIMIT 1",
            [int(agent_id), int(channel_id), int(topic_id or 0)],
        )
        row = cursor.fetchone()
    return row[0] if row else None
