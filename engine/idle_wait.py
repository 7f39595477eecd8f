"""How an idle gateway waits (`IdleWait`): until a wake-up, the next due timer, the idle pass, or the
stop signal. engine/wake.py describes what wakes it and the listeners that carry wake-ups."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import math

from asgiref.sync import sync_to_async

from cindy_site.clock import get_clock, now
from conversations.selectors import node_next_due_at
from engine.gateway_context import GatewayContext
from engine.initiative_steps import idle_seconds, initiative_next_due_at, seconds_until_due


class IdleWait:
    """The wait of `engine.gateway.Gateway` after an idle pass (see the module docstring)."""

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    async def idle_seconds(self, longest: float | None = None) -> float:
        """How long the loop may sleep: `longest` (the tick interval by default), or less when an event
        or refresh is due sooner (engine/initiative_steps.py)."""
        ctx = self.context
        return await idle_seconds(list(ctx.clients), ctx.tick_seconds if longest is None else longest)

    def full_pass_seconds(self) -> float:
        """The most time between two full passes while wake-ups work (the idle pass, or the tick if
        longer); the tick while they cannot arrive (the poll fails, Redis is away)."""
        ctx = self.context
        if ctx.wake is None or not ctx.wake.healthy():
            return ctx.tick_seconds
        return max(ctx.tick_seconds, ctx.idle_pass_seconds)

    async def timer_seconds(self) -> float:
        """Seconds until the earliest due timer of the held agents that `idle_seconds` does not cover:
        a pending node's `not_before`, a flood pause or a reconnect backoff ending (infinity: none)."""
        if not self.context.clients:
            return math.inf
        when = now()
        due = await sync_to_async(node_next_due_at)(agent_ids=list(self.context.clients), after=when)
        return self._timers(due, when)

    def _timers(self, node_due: dt.datetime | None, when: dt.datetime) -> float:
        """`timer_seconds` from the earliest pending node's `not_before` after `when`."""
        seconds = (node_due - when).total_seconds() if node_due is not None else math.inf
        mono = get_clock().monotonic()
        for client in self.context.clients.values():
            if client.paused_until is not None and client.paused_until > when:
                seconds = min(seconds, (client.paused_until - when).total_seconds())
            if not client.connected and client.retry_at > mono:
                seconds = min(seconds, client.retry_at - mono)
        return max(0.0, seconds)

    @staticmethod
    def _dues(held: list[int], when: dt.datetime) -> tuple[dt.datetime | None, dt.datetime | None]:
        """The earliest event or schedule refresh, and the earliest pending node after `when`, of the
        `held` agents: what `idle_seconds` and `timer_seconds` read, in one trip to the database
        thread (the wait after every idle pass asks it)."""
        return initiative_next_due_at(agent_ids=held), node_next_due_at(agent_ids=held, after=when)

    async def wait_for_work(
        self, *, full_due: float | None = None, due_since: dt.datetime | None = None
    ) -> str:
        """Wait after an idle pass; returns why it ended: "turn" (a wake-up for a turn only),
        "wakeup" (any other), "timer" or "stopping". `full_due` (monotonic): a full pass is due
        then, so the wait ends by then. `due_since` (after a settled pass, when its tick looked): a
        pending node whose time came since then is due now, not only one due after the wait's reading."""
        ctx = self.context
        wakeup = ctx.wakeup
        if ctx.wake is None:  # CINDY_WAKE off: the tick, or an event or refresh due sooner
            seconds = await self.idle_seconds()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.stopping.wait(), timeout=seconds)
            return "stopping" if ctx.stopping.is_set() else "timer"
        # While wake-ups cannot arrive (the poll fails, Redis is away) the tick is the backstop again.
        seconds = self.full_pass_seconds()
        if ctx.clients:
            when = now()
            # A node that fell due since `due_since` (after the tick looked, while the pass went on) is due now.
            after = min(when, due_since) if due_since is not None else when
            initiative, node = await sync_to_async(self._dues)(list(ctx.clients), after)
            seconds = min(seconds_until_due(initiative, seconds), self._timers(node, when))
        if full_due is not None:
            seconds = min(seconds, max(0.0, full_due - get_clock().monotonic()))
        if not wakeup.is_set() and seconds > 0:
            await self.pause(seconds)
        woken, full = wakeup.is_set(), wakeup.full
        wakeup.clear()
        if ctx.stopping.is_set():
            return "stopping"
        if not woken:
            return "timer"
        return "wakeup" if full else "turn"

    async def pause(self, seconds: float) -> None:
        """Sleep `seconds` or until `wakeup` is set (tests replace this to move an injected clock)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.context.wakeup.wait(), timeout=seconds)
