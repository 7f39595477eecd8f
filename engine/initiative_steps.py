"""Gateway steps for time-based work: due events, the daily schedule planning turns, consolidation.

Each step claims its rows with a compare-and-set in a thread (`sync_to_async`); `idle_seconds` tells
the gateway's wait (engine/wake.py) how long it may sleep before the next one is due.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from cindy_site.clock import get_clock, now
from engine.consolidation import ConsolidationMemo, consolidations_start_due, quiet_times
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
        held = [client.agent for client in self.context.clients.values() if client.connected]
        return bool(await sync_to_async(schedule_refresh_due)(agents=held)) if held else False


class ConsolidationStep:
    """Starts the consolidation turns of quiet chats (engine/consolidation.py). It looks every half of
    CINDY_CONSOLIDATE_QUIET_SECONDS (or of CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS, when shorter), at
    least every second and at most every CHECK_SECONDS. The interval follows the parameters in effect
    at each pass: a quiet time lowered in the admin counts from the last look, not after the interval
    the old one set."""

    name = "consolidation"
    CHECK_SECONDS = 60.0

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        self.memo = ConsolidationMemo()
        self.last_check: float | None = None  # monotonic; None: at the next pass

    async def run(self) -> bool:
        clock = get_clock()
        quiet = quiet_times()[1].total_seconds()
        interval = min(self.CHECK_SECONDS, max(1.0, quiet / 2))
        if self.last_check is not None and clock.monotonic() < self.last_check + interval:
            return False
        if self.context.upkeep_waits(last=self.last_check, period=interval):
            return False
        self.last_check = clock.monotonic()
        held = [client.agent for client in self.context.clients.values() if client.connected]
        if not held:
            return False
        return bool(await sync_to_async(consolidations_start_due)(agents=held, memo=self.memo))


def initiative_next_due_at(*, agent_ids: list[int]) -> dt.datetime | None:
    """The earliest event or schedule refresh of `agent_ids` (None: none pending)."""
    dues = [event_next_due_at(agent_ids=agent_ids), schedule_next_due_at(agent_ids=agent_ids)]
    return min((d for d in dues if d is not None), default=None)


def seconds_until_due(due: dt.datetime | None, longest: float) -> float:
    """`longest`, or less when `due` comes sooner (never below zero)."""
    if due is None:
        return longest
    return max(0.0, min(longest, (due - now()).total_seconds()))


async def idle_seconds(held: list[int], longest: float) -> float:
    """How long the gateway may sleep: `longest`, or less when an event or schedule refresh of the
    `held` agents is due sooner."""
    if not held:
        return longest
    return seconds_until_due(await sync_to_async(initiative_next_due_at)(agent_ids=held), longest)
