"""Writing the activity stream. Every state change in the engine goes through `record_event`."""

from __future__ import annotations

import datetime as dt
from typing import Any

from cindy_site.clock import now
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
    sockets (see the dashboard relay)."""
    event = activity_event(kind, **fields)
    event.save()
    return event


def events_record(events: list[ActivityEvent]) -> None:
    """Append many events in one INSERT (built with `activity_event`), in list order."""
    if events:
        ActivityEvent.objects.bulk_create(events)
