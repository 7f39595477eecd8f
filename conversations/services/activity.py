"""Writing the activity stream. Every state change in the engine goes through `record_event`."""

from __future__ import annotations

import datetime as dt
import functools
import json
from typing import Any

from django.db import connection

from cindy_site.bulk import placeholders
from cindy_site.clock import now
from cindy_site.rows import insert as insert_row
from conversations.models import ActivityEvent

Kind = ActivityEvent.Kind
_KINDS = frozenset(Kind.values)


def activity_event(
    kind: str,
    *,
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    summary: str = "",
    data: dict[str, Any] | None = None,
    when: dt.datetime | None = None,
) -> ActivityEvent:
    """One unsaved event, checked: an unknown kind is refused with the fix."""
    if kind not in _KINDS:
        raise ValueError(f"unknown activity kind {kind!r}: add it to ActivityEvent.Kind")
    return ActivityEvent(
        created=when or now(),
        kind=kind,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        summary=summary[:2000],
        data=data or {},
    )


def record_event(kind: str, **fields: Any) -> ActivityEvent:
    """Append one event (the fields of `activity_event`); the web process relays it to dashboard
    sockets (see the dashboard relay).

    One plain INSERT of the values the model's fields prepare, as `save()` would write them
    (`cindy_site.rows.insert`), without building the ORM's insert: the engine records an event at
    every step of every turn, several per inbound message (`save()` about 0.15 ms of CPU, the plain
    INSERT about 0.02 ms)."""
    return insert_row(activity_event(kind, **fields))


def events_record(events: list[ActivityEvent]) -> None:
    """Append many events in one INSERT (built with `activity_event`), in list order."""
    if events:
        ActivityEvent.objects.bulk_create(events)


#: The columns `events_insert` writes (every one but the id), in their row order.
_ROW_COLUMNS = ("created", "kind", "agent_id", "conversation_id", "node_id", "summary", "data")


@functools.cache
def _insert_sql(vendor: str) -> str:
    """The INSERT of one event row (`_ROW_COLUMNS`), quoted for the database `vendor`, for `events_insert`."""
    quote = connection.ops.quote_name
    return (
        f"INSERT INTO {quote(ActivityEvent._meta.db_table)} ({', '.join(quote(c) for c in _ROW_COLUMNS)}) "
        f"VALUES ({placeholders(len(_ROW_COLUMNS))})"
    )


def events_insert(
    kind: str,
    rows: list[tuple[int | None, int | None, int | None, str, dict[str, Any]]],
    *,
    when: dt.datetime,
) -> None:
    """Append many events of one `kind`, all at `when`, from plain rows (agent id, conversation id,
    node id, summary, data): one statement and no model object, for the tick's claims (up to 200 per
    pass), where building and preparing each event made up a fifth of the pass. The stored rows are
    those `activity_event` would build."""
    if kind not in _KINDS:
        raise ValueError(f"unknown activity kind {kind!r}: add it to ActivityEvent.Kind")
    if not rows:
        return
    created = connection.ops.adapt_datetimefield_value(when)
    with connection.cursor() as cursor:
        cursor.executemany(
            _insert_sql(connection.vendor),
            [
                (created, str(kind), agent_id, conversation_id, node_id, summary[:2000], json.dumps(data))
                for agent_id, conversation_id, node_id, summary, data in rows
            ],
        )
