"""Writing the activity stream. Every state change in the engine goes through `record_event`."""

from __future__ import annotations

from typing import Any

from cindy_site.clock import now
from conversations.models import ActivityEvent

Kind = ActivityEvent.Kind


def record_event(
    kind: str,
    *,
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    summary: str = "",
    data: dict[str, Any] | None = None,
) -> ActivityEvent:
    """Append one event; the web process relays it to dashboard sockets (see the dashboard relay)."""
    if kind not in Kind.values:
        raise ValueError(f"unknown activity kind {kind!r}: add it to ActivityEvent.Kind")
    return ActivityEvent.objects.create(
        created=now(),
        kind=kind,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        summary=summary[:2000],
        data=data or {},
    )
