"""The lease heartbeat and self-fencing: one account, one connection, even when the step loop is slow.

`Gateway.run` drives `Heartbeat.run` from an asyncio task of its own, so a step that outlasts the lease (a
reconcile, a 60 s action timeout, a SQLite busy wait on the ORM thread the steps share) never holds
up the renewal. The renewal runs on a connection of its own (`sync_to_async(thread_sensitive=False)`).

Self-fencing: a client whose lease was not renewed within CINDY_LEASE_SECONDS minus a safety margin
is disconnected and dropped before the lease can expire, because from then on another gateway may
take the agent over, and two connections of one Telegram account get its key revoked
(AUTH_KEY_DUPLICATED). A fenced agent is taken again by the `leases` step once the database answers.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings

from cindy_site.clock import get_clock, now
from engine.gateway_context import GatewayContext
from engine.health import beat_interval, process_beat, redis_problem
from engine.leases import lease_heartbeat
from engine.models import ProcessHeartbeat

logger = logging.getLogger("engine.gateway")

#: The shortest pause of the heartbeat task, so a deadline already due does not spin the loop.
MIN_PAUSE_SECONDS = 0.05
#: How long the fence waits for its drops' database writes before going on without them.
FENCE_DROP_WAIT_SECONDS = 1.0
#: Fence drops still writing in the background (referenced, so they are not collected mid-way).
_FENCE_DROPS: set[asyncio.Future] = set()


def heartbeat_interval() -> float:
    """Seconds between renewals: three chances before a lease expires."""
    return settings.CINDY_LEASE_SECONDS / 3


def fence_after() -> float:
    """Seconds without a renewal after which a client is disconnected: 5/6 of the lease.

    The margin (5 s of the default 30) covers the disconnect itself and the time between starting a
    renewal, which is when the fence counts from, and the database writing it.
    """
    return settings.CINDY_LEASE_SECONDS * 5 / 6


class Heartbeat:
    """Renews the gateway's leases and fences its clients, beside the step loop (see the module
    docstring), and writes the gateway's health row (engine/health.py) from `health_state`."""

    def __init__(self, context: GatewayContext, *, health_state: Callable[[], dict[str, Any]]) -> None:
        self.context = context
        self.health_state = health_state
        self._last_heartbeat = 0.0
        self._renewal: asyncio.Future | None = None
        #: The gateway's health row: the last write started (monotonic), and the one in flight.
        self._last_beat: float | None = None
        self.beat: asyncio.Future | None = None
        #: When the leases were last renewed (wall clock), for the health row.
        self.renewed_at: dt.datetime | None = None

    async def forever(self) -> None:
        """Renew and fence on a timer of its own until cancelled (`Gateway.run` starts and stops it)."""
        while True:
            try:
                await self.run()
            except Exception:
                logger.exception("lease heartbeat failed")
            self.start_beat()
            await self.pause(self._heartbeat_wait())

    def start_beat(self) -> bool:
        """Write the gateway's health row when due, in the background: a write stuck on the database
        must not hold up the fence. Returns whether it started one."""
        at = get_clock().monotonic()
        if self._last_beat is not None and at - self._last_beat < beat_interval():
            return False
        if self.beat is not None and not self.beat.done():
            return False
        self._last_beat = at
        self.beat = asyncio.ensure_future(self._write_beat())
        return True

    async def _write_beat(self) -> None:
        try:
            problem = await asyncio.to_thread(redis_problem)
            await self.context.db(process_beat, isolated=True)(
                name=self.context.gateway_id,
                kind=ProcessHeartbeat.Kind.GATEWAY,
                problem=problem,
                **self.health_state(),
            )
        except Exception as exc:  # the row going stale is how health sees a gateway cut off
            logger.warning("could not write the gateway's health row: %r", exc)

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def _heartbeat_wait(self) -> float:
        """Seconds until the next renewal or the next fence deadline, whichever comes first."""
        at = get_clock().monotonic()
        due = self._last_heartbeat + heartbeat_interval()
        for client in self.context.clients.values():
            due = min(due, client.renewed_at + fence_after())
        return min(max(due - at, MIN_PAUSE_SECONDS), heartbeat_interval())

    async def run(self, *, force: bool = False) -> bool:
        """Renew our leases when due, then fence every client not renewed in time.

        One renewal is in flight at a time. It is awaited only until the earliest fence deadline: a
        renewal stuck on the database does not stop the fence.
        """
        clock = get_clock()
        clients = self.context.clients
        started = False
        if force or clock.monotonic() - self._last_heartbeat >= heartbeat_interval():
            self._last_heartbeat = clock.monotonic()
            if clients and (self._renewal is None or self._renewal.done()):
                self._renewal = asyncio.ensure_future(self._renew(list(clients), self._last_heartbeat))
                started = True
        if self._renewal is not None and not self._renewal.done():
            await asyncio.wait({self._renewal}, timeout=max(self._until_fence(), 0))
        fenced = await self._fence()
        return started or fenced

    def _until_fence(self) -> float:
        clients = self.context.clients
        if not clients:
            return 0.0
        oldest = min(client.renewed_at for client in clients.values())
        return oldest + fence_after() - get_clock().monotonic()

    async def _renew(self, held: list[int], started: float) -> None:
        try:
            still = await self.context.db(lease_heartbeat, isolated=True)(
                holder=self.context.gateway_id, agent_ids=held
            )
        except Exception as exc:  # the database is away: the fence decides when to let go
            logger.warning("could not renew the agent leases: %r", exc)
            return
        self.renewed_at = now()
        for agent_id in held:
            client = self.context.clients.get(agent_id)
            if client is None:
                continue
            if agent_id in still:
                client.renewed_at = max(client.renewed_at, started)
            else:
                logger.error("lost the lease of agent %s to another gateway; dropping it", client.agent.name)
                await self._quiet_drop(agent_id, "lease lost")

    async def _fence(self) -> bool:
        at = get_clock().monotonic()
        stale = [(a, c) for a, c in self.context.clients.items() if at - c.renewed_at >= fence_after()]
        for _, client in stale:
            logger.error(
                "agent %s: lease not renewed for %.0f s; disconnecting before another gateway may "
                "take it (it is taken again once the database answers)",
                client.agent.name,
                at - client.renewed_at,
            )
        # Together: every stale client is disconnected before any of them waits on the database. The
        # drops' database writes may hang on the very outage that fenced them: they finish in the
        # background, so that the fence keeps its deadlines for the clients that go stale next.
        drops = [asyncio.ensure_future(self._quiet_drop(a, "lease not renewed in time")) for a, _ in stale]
        for drop in drops:
            _FENCE_DROPS.add(drop)
            drop.add_done_callback(_FENCE_DROPS.discard)
        if drops:
            await asyncio.wait(drops, timeout=FENCE_DROP_WAIT_SECONDS)
        return bool(stale)

    async def _quiet_drop(self, agent_id: int, reason: str) -> None:
        """Drop without releasing (the lease is not ours to trust any more), logging any failure."""
        try:
            await self.context.drop(agent_id, reason, release=False, isolated=True)
        except Exception:
            logger.exception("agent %s: dropping it after %s failed", agent_id, reason)
