"""What the gateway's steps share: the held clients, the gateway's identity and settings, its events,
and the one action every step may take on a client, dropping it.

Each step object (engine/gateway.py lists them) gets this context at construction and keeps its own
state to itself; what one step publishes for another is a field here (`standing_by`, `draining`),
never an attribute of that step.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from agents.models import Agent
from cindy_site.clock import get_clock
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from conversations.transport.base import Transport
from engine.clients import AgentClient
from engine.heap import Heap
from engine.ingest import ingest_updates
from engine.leases import agent_offline_unless_held, lease_release
from engine.wake import Wakeup

if TYPE_CHECKING:
    from engine.wake import WakeListener
    from engine.workers import WorkerProcess

logger = logging.getLogger("engine.gateway")

#: How long a client being released may take to hand over the updates it already received.
FLUSH_SECONDS = 5
#: Once a pass has run this long, periodic upkeep that can wait waits for a later pass
#: (`GatewayContext.upkeep_waits`).
PASS_BUDGET_SECONDS = 0.025


class Step(Protocol):
    """One step of a gateway pass: does one unit of work and returns whether it did any."""

    name: str

    async def run(self) -> bool: ...


@dataclass(eq=False)
class GatewayContext:
    gateway_id: str
    #: The agents this gateway may drive (empty: every enabled agent).
    names: list[str]
    #: Builds an agent's transport: `transport_factory(agent, gateway_id=...)`.
    transport_factory: Callable[..., Transport]
    #: Queues planning for (node id, claim token): django-q2, or a recorder in tests.
    enqueue: Callable[[int, str], None]
    tick_seconds: float
    #: With wake-ups: the longest wait of an idle gateway (engine/wake.py).
    idle_pass_seconds: float
    #: `runagents --auto`: the most agents this gateway takes (engine/placement.py); None: all it may.
    capacity: int | None = None
    #: The task workers this gateway supervises (None: they run elsewhere).
    workers: WorkerProcess | None = None
    #: False only in tests that run the whole gateway inside one test transaction on one connection.
    isolated_heartbeat: bool = True
    #: Sets `wakeup` when another process made work (engine/wake.py); None with CINDY_WAKE off.
    wake: WakeListener | None = None
    #: The agents held, by id: the lease step adds them, `drop` removes them.
    clients: dict[int, AgentClient] = field(default_factory=dict)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set by wake-ups, transports' updates and `Gateway.request_stop`.
    wakeup: Wakeup = field(default_factory=Wakeup)
    #: Set by the lease step while every agent this gateway may drive is held by another: what it
    #: logged about it (the workers step starts no workers meanwhile).
    standing_by: str = ""
    #: --auto: set by the lease step while this gateway hands all its agents back.
    draining: bool = False
    #: The process's heap, settled after each burst of connections (engine/heap.py); `drop` counts.
    heap: Heap = field(default_factory=Heap)
    #: When the pass running now began (the injected clock's monotonic time); None between passes.
    pass_started: float | None = None
    #: Whether the pass running now is a follow-up pass (engine/gateway.py, `Gateway.run_once`).
    follow_up: bool = False
    #: The agents whose transport reported updates (`on_update`) since the ingest step last polled
    #: them: a follow-up pass polls only these among the transports that report (engine/connect_steps.py).
    updated: set[int] = field(default_factory=set)

    def upkeep_waits(self, *, last: float | None, period: float) -> bool:
        """Whether periodic upkeep due every `period` seconds, last run at `last` (monotonic), waits for
        a later pass rather than run in this one: the pass has run PASS_BUDGET_SECONDS already, and the
        upkeep is less than a whole period late (so it runs at the latest one period late, however
        busy the passes are).

        The steps' periodic work (the watchdog's and presence's looks every 5 s, the heap's collection
        every 10 s, the request reaper's every 30 s, the sticker sweep's and consolidation's every
        minute) falls due on timers of its own; left alone it lines up now and then in one pass, whose
        length is then the sum of them all (at 1,000 agents, passes of 65 to 124 ms made of four or five
        such looks). Spread this way, a pass carries what is due until its budget is spent."""
        if self.pass_started is None or last is None:
            return False
        at = get_clock().monotonic()
        return at - self.pass_started >= PASS_BUDGET_SECONDS and at - last < 2 * period

    def connected(self) -> list[tuple[int, AgentClient]]:
        """The held clients that are connected now, as (agent id, client)."""
        return [(agent_id, c) for agent_id, c in list(self.clients.items()) if c.connected]

    def db(self, fn: Callable[..., Any], *, isolated: bool = False) -> Callable[..., Any]:
        """`fn` as a coroutine. Isolated calls use their own connection in a pool thread, never the ORM
        thread the steps share, so a step waiting on the database cannot delay them."""
        if isolated and self.isolated_heartbeat:
            return sync_to_async(_on_own_connection(fn), thread_sensitive=False)
        return sync_to_async(fn)

    def new_transport(self, agent: Agent) -> Transport:
        """The agent's transport; one that receives updates on its own notes them, and wakes the loop
        through them."""
        transport = self.transport_factory(agent, gateway_id=self.gateway_id)
        if hasattr(transport, "on_update"):
            transport.on_update = functools.partial(self.on_update, agent.id)
        return transport

    def on_update(self, agent_id: int | None = None) -> None:
        """Called by a transport when updates arrive on their own (Telethon): note the agent for the
        ingest step and, with wake-ups, wake the loop for a turn."""
        if agent_id is not None:
            self.updated.add(agent_id)
        if self.wake is not None:
            self.wakeup.set_turn()

    async def drop(
        self,
        agent_id: int,
        reason: str,
        *,
        release: bool = True,
        flush: bool = False,
        isolated: bool = False,
    ) -> None:
        """Stop driving an agent: disconnect it, release its lease (unless it may not be ours any more).

        `flush` first ingests the updates the client already received (a drain, an agent stopped by
        an operator), so they are not lost with the connection. `isolated` is the heartbeat's path: its
        database writes use the heartbeat's own connection. A second drop of the same agent (the fence
        and a step can race) does nothing.
        """
        client = self.clients.pop(agent_id, None)
        if client is None:
            return
        client.dropped = True
        self.heap.client_dropped()
        if flush and client.connected:
            await flush_updates(client)
        await quiet_disconnect(client)
        if release:
            await self.db(lease_release, isolated=isolated)(holder=self.gateway_id, agent_ids=[agent_id])
            await self.db(record_event, isolated=isolated)(
                ActivityEvent.Kind.AGENT_OFFLINE, agent_id=agent_id, summary=reason
            )
        else:  # fenced or lost: another gateway may drive the agent already
            await self.db(agent_offline_unless_held, isolated=isolated)(
                agent_id=agent_id, gateway_id=self.gateway_id, reason=reason
            )
        logger.info("released agent %s: %s", client.agent.name, reason)


async def flush_updates(client: AgentClient) -> None:
    """Poll and ingest once more before a disconnect, bounded by FLUSH_SECONDS; failures are logged."""
    try:
        updates = await asyncio.wait_for(client.transport.poll_updates(), FLUSH_SECONDS)
        if updates:
            await sync_to_async(ingest_updates)(agent_id=client.agent.pk, updates=updates)
    except Exception as exc:  # the reconciler of the next gateway fetches missed messages again
        logger.warning("agent %s: could not ingest its last updates: %r", client.agent.name, exc)


async def quiet_disconnect(client: AgentClient) -> None:
    try:
        await client.transport.disconnect()
    except Exception as exc:  # a broken connection must not block a drop or a reconnect
        logger.info("agent %s: disconnect failed: %r", client.agent.name, exc)


def _on_own_connection(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run `fn` in a pool thread with a usable connection of that thread, closed again afterwards."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return call
