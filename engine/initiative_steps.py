"""Gateway steps for time-based work: due events and the daily schedule planning turns.

A mixin of `engine.gateway.Gateway` (which provides `clients` and `tick_seconds`). Each step claims its
rows with a compare-and-set in a thread (`sync_to_async`); `idle_seconds` tells the loop how long it
may sleep before the next one is due.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from cindy_site.clock import now
from engine.events import event_next_due_at, events_fire_due
from engine.schedule_planning import schedule_next_due_at, schedule_refresh_due


class InitiativeSteps:
    clients: dict
    tick_seconds: float

    async def step_events(self) -> bool:
        """Fire the due events of the agents this gateway holds (compare-and-set claim: engine/events.py)."""
        held = [agent_id for agent_id, client in self.clients.items() if client.connected]
        return bool(await sync_to_async(events_fire_due)(agent_ids=held)) if held else False

    async def step_schedules(self) -> bool:
        """Start the daily schedule planning turns that are due (engine/schedule_planning.py)."""
        held = [agent_id for agent_id, client in self.clients.items() if client.connected]
        return bool(await sync_to_async(schedule_refresh_due)(agent_ids=held)) if held else False

    async def idle_seconds(self, longest: float | None = None) -> float:
        """How long the loop may sleep: `longest` (the tick interval by default), or less when an event
        or refresh is due sooner."""
        longest = self.tick_seconds if longest is None else longest
        if not self.clients:
            return longest
        held = list(self.clients)
        dues = [
            await sync_to_async(event_next_due_at)(agent_ids=held),
            await sync_to_async(schedule_next_due_at)(agent_ids=held),
        ]
        due = min((d for d in dues if d is not None), default=None)
        if due is None:
            return longest
        return max(0.0, min(longest, (due - now()).total_seconds()))
