"""Per-agent refreshes that never hold up the gateway's pass: each agent on a phase of its own, the
Telegram calls in tasks beside the pass, at most CINDY_UPKEEP_CONCURRENCY of them at a time.

A refresh (the dialog list, the Saved Messages library) reads from Telegram once per agent and period.
Run inside the pass, one agent after the other, a 100 ms round trip costs 100 s a minute at 1,000
agents and no tick runs meanwhile. Here the step only starts the refreshes that are due, each as an
asyncio task (as the unread scan does, engine/attention.py), and returns: the pass never waits on
Telegram. The agents' refreshes are spread over the period by agent id (`refresh_offset`), so the
same number come due each second instead of every agent on the same beat. A semaphore caps how many
run at once, so a burst (a gateway starting with 1,000 accounts) queues instead of flooding Telegram.
A flood wait moves that account's next refresh to after the wait; other errors are logged and the
next refresh comes at the usual period. A finished refresh that changed something wakes the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from django.conf import settings

from cindy_site.clock import get_clock
from conversations.transport.base import FloodWait
from engine.clients import AgentClient

logger = logging.getLogger("engine.gateway")

#: A refresh job: reads from Telegram and applies it; returns whether anything changed.
Job = Callable[[int, AgentClient], Awaitable[bool]]

#: How far before its beat a clock still counts as on it: the monotonic clock is a float sum of
#: steps (an injected clock's too), so a step taken on the beat may read a hair before it.
BEAT_TOLERANCE = 1e-6


class UpkeepCap:
    """At most CINDY_UPKEEP_CONCURRENCY of one step's Telegram jobs at a time (the refreshes of one
    kind, the unread scans), and how many ran at once (tests and benches read `most_running`). The
    semaphore belongs to the loop it was made on: a gateway started again in the same process makes
    a new one."""

    def __init__(self) -> None:
        self.running = 0
        self.most_running = 0
        self._semaphore: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore[0] is not loop:
            self._semaphore = (loop, asyncio.Semaphore(settings.CINDY_UPKEEP_CONCURRENCY))
        async with self._semaphore[1]:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            try:
                yield
            finally:
                self.running -= 1


def dialog_read_period(period: float, held: int) -> float:
    """`period` for one agent's periodic dialog-list read, stretched so that a gateway holding `held`
    agents asks Telegram for at most CINDY_DIALOG_READS_PER_SECOND lists a second on average. A scan
    every 30 s is 33 lists a second at 1,000 agents, each parsed on the gateway's loop (with scans off
    a 1,000-agent gateway's idle CPU was about 1.4 points lower, bench/RESULTS.md); the original scans
    its agents one after another with a pause of up to 5 s before each, fewer than one list a second.
    Not stretched when the period or the rate is 0."""
    rate = settings.CINDY_DIALOG_READS_PER_SECOND
    if period <= 0 or rate <= 0:
        return period
    return max(period, held / rate)


def refresh_offset(agent_id: int, period: float) -> float:
    """The agent's phase: a stable fraction of the period, spread over the agents by id."""
    return period * (agent_id * 7919 % 1000) / 1000


@dataclass
class RefreshState:
    """One agent's refresh of one kind, in the gateway's memory."""

    client: AgentClient
    due: float  # monotonic
    task: asyncio.Task | None = None
    changed: bool = False  # the last finished refresh changed something the step has not reported


class Refreshes:
    """The refreshes of one kind (dialogs, library) of every agent a gateway holds."""

    def __init__(self, name: str, *, period: float, at_connect: bool, job: Job) -> None:
        self.name = name
        self.period = period
        self.at_connect = at_connect  # the first refresh at once, not at the agent's phase
        self.job = job
        self.states: dict[int, RefreshState] = {}
        self.cap = UpkeepCap()

    def step(self, clients: dict[int, AgentClient], wakeup: asyncio.Event | None = None) -> bool:
        """Start the refreshes that are due (never waits for one); returns whether refreshes finished
        since the previous step changed anything."""
        for agent_id in [a for a in self.states if a not in clients]:
            self._forget(agent_id)
        clock = get_clock().monotonic()
        changed = False
        for agent_id, client in list(clients.items()):
            if not client.connected:
                continue
            state = self.states.get(agent_id)
            if state is None or state.client is not client:  # new, or reconnected with a new client
                self._forget(agent_id)
                first = clock if self.at_connect else self._next_due(agent_id, clock)
                state = self.states[agent_id] = RefreshState(client=client, due=first)
            if state.task is not None:
                if not state.task.done():
                    continue
                state.task = None
            if state.changed:
                changed, state.changed = True, False
            if clock < state.due - BEAT_TOLERANCE:
                continue
            state.due = self._next_due(agent_id, clock)
            state.task = asyncio.create_task(
                self._run(agent_id, client, state, wakeup), name=f"{self.name} refresh {agent_id}"
            )
        return changed

    def _next_due(self, agent_id: int, clock: float) -> float:
        """The agent's next beat after `clock`, on its own phase (a late step does not shift it). A
        clock within BEAT_TOLERANCE before a beat is on it: the next beat is the one after."""
        phase = refresh_offset(agent_id, self.period)
        return phase + ((clock + BEAT_TOLERANCE - phase) // self.period + 1) * self.period

    async def _run(
        self, agent_id: int, client: AgentClient, state: RefreshState, wakeup: asyncio.Event | None
    ) -> None:
        async with self.cap.held():
            try:
                changed = await self.job(agent_id, client)
            except asyncio.CancelledError:
                raise
            except FloodWait as exc:
                state.due = max(state.due, get_clock().monotonic() + exc.seconds)
                logger.info(
                    "agent %s: %s refresh waits %ss for Telegram (flood wait)",
                    client.agent.name,
                    self.name,
                    exc.seconds,
                )
                return
            except Exception as exc:
                quiet = client.dropped or not client.connected
                (logger.info if quiet else logger.warning)(
                    "agent %s: %s refresh failed: %r", client.agent.name, self.name, exc
                )
                return
        if changed:
            state.changed = True
            if wakeup is not None:
                wakeup.set()

    def _forget(self, agent_id: int) -> None:
        state = self.states.pop(agent_id, None)
        if state is not None and state.task is not None:
            state.task.cancel()

    def tasks(self) -> list[asyncio.Task]:
        return [s.task for s in self.states.values() if s.task is not None and not s.task.done()]

    async def settle(self) -> bool:
        """Wait for the refreshes in flight; returns whether any changed something (and reports it)."""
        tasks = self.tasks()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        changed = False
        for state in self.states.values():
            if state.changed:
                changed, state.changed = True, False
        return changed

    async def stop(self) -> None:
        """Cancel the refreshes in flight (the gateway is stopping)."""
        tasks = self.tasks()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
