"""Gateway steps for time-based work: due events and the daily schedule planning turns.

Each step claims its rows with a compare-and-set in a thread (`sync_to_async`); `idle_seconds` tells
the gateway's wait (engine/wake.py) how long it may sleep before the next one is due.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from cindy_site.clock import now
from engine.events import event_next_due_at, events_fire_due
from engine.schedule_planning import schedule_next_due_at, schedule_refresh_due

if TYPE_CHECKING:
    from engine.gateway_context import GatewayContext


class EventsStep:
    """Fires the due events of the agents this gateway holds (compare-and-set claim: engine/events.py)."""

    name = "events"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    async def run(self) -> bool:
        held = [agent_id for agent_id, client in self.context.clients.items() if client.connected]
        return bool(await sync_to_async(events_fire_due)(agent_ids=held)) if held else False


class SchedulesStep:
    """Starts the daily schedule planning turns that are due (engine/schedule_planning.py)."""

    name = "schedules"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    async def run(self) -> bool:
        held = [agent_id for agent_id, client in self.context.clients.items() if client.connected]
        return bool(await sync_to_async(schedule_refresh_due)(agent_ids=held)) if held else False


async def idle_seconds(held: list[int], longest: float) -> float:
    """How long the gateway may sleep: `longest`, or less when an event or schedule refresh of the
    `held` agents is due sooner."""
    if not held:
        return longest
    dues = [
        await sync_to_async(event_next_due_at)(agent_ids=held),
        await sync_to_async(schedule_next_due_at)(agent_ids=held),
    ]
    due = min((d for d in dues if d is not None), default=None)
    if due is None:
        return longest
    return max(0.0, min(longest, (due - now()).total_seconds()))
