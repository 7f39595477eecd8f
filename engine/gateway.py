"""The gateway (`manage.py runagents`): one asyncio loop driving the Telegram clients of the agents it
holds, ingesting their updates and running the tick.

It follows the sendalerts skeleton: a thin loop over step objects, each doing one unit of work and
returning whether it did any; a signal only sets the shutdown event, the step in flight (a Telegram
action included) finishes, and `drain` releases leases before exit. All ORM work runs in a thread via
`sync_to_async`; the LLM is never called here (planning is enqueued on django-q2 workers).

The steps share only the `GatewayContext` (engine/gateway_context.py: the held clients, the
gateway's identity, settings and events); each keeps its own state. docs/gateway.md maps them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import secrets
import signal
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connections

from cindy_site.clock import get_clock, now
from conversations.services.wake import wake_gateway_forget, wake_gateways, wake_not_needed
from conversations.transport.base import Transport
from engine.attention import AttentionStep
from engine.connect_steps import ConnectStep, IngestStep
from engine.dispatch import enqueue_received
from engine.gateway_context import GatewayContext, Step
from engine.health import gateway_forget, processes_forget_gone
from engine.heap import Heap
from engine.heartbeat import Heartbeat
from engine.idle_wait import IdleWait
from engine.initiative_steps import ConsolidationStep, EventsStep, SchedulesStep
from engine.lease_steps import LeasesStep
from engine.leases import lease_release
from engine.models import ProcessHeartbeat
from engine.placement import gateway_drain_request, placement_register
from engine.presence import PresenceStep
from engine.signin import SignInStep
from engine.tick_step import RequestsStep, TickStep
from engine.transports import transport_for
from engine.upkeep import MediaStep, ReapRequestsStep, RefreshStep, StickersStep
from engine.wake import wake_listener
from engine.watchdog import Watchdog, WorkersStep
from llm.parameter_store import parameters_refresh

if TYPE_CHECKING:
    from engine.clients import AgentClient
    from engine.workers import WorkerProcess

logger = logging.getLogger("engine.gateway")
#: How often a pass ends with Django's check of the database connections (close_old_connections).
CONNECTION_CHECK_SECONDS = 60.0


def default_gateway_id() -> str:
    name = settings.CINDY_GATEWAY_NAME or socket.gethostname()
    return f"{name}:{os.getpid()}:{secrets.token_hex(3)}"


class Gateway:
    """The loop, and the steps it runs in order (`steps`), all built with one `GatewayContext`."""

    def __init__(
        self,
        *,
        names: Iterable[str] = (),
        gateway_id: str | None = None,
        transport_factory: Callable[..., Transport] = transport_for,
        enqueue: Callable[[int, str], None] = enqueue_received,
        workers: WorkerProcess | None = None,
        tick_seconds: float | None = None,
        isolated_heartbeat: bool = True,
        capacity: int | None = None,
        freeze_heap: bool = False,
    ) -> None:
        self.gateway_id = gateway_id or default_gateway_id()
        self.context = ctx = GatewayContext(
            gateway_id=self.gateway_id,
            names=list(names),
            transport_factory=transport_factory,
            enqueue=enqueue,
            tick_seconds=tick_seconds if tick_seconds is not None else settings.CINDY_TICK_SECONDS,
            idle_pass_seconds=settings.CINDY_IDLE_PASS_SECONDS,
            capacity=capacity,
            workers=workers,
            isolated_heartbeat=isolated_heartbeat,
            wake=wake_listener(self.gateway_id),
            heap=Heap(freeze=freeze_heap),  # runagents only: a test process's objects stay unfrozen
        )
        self.idle = IdleWait(ctx)
        self.heartbeat = Heartbeat(ctx, health_state=self.health_state)
        self.watchdog = Watchdog(ctx)
        media = MediaStep(ctx)
        self.ingest = IngestStep(ctx)
        self.leases = LeasesStep(ctx)
        #: The steps that run tasks beside the pass, which `drain` cancels.
        self.beside = (AttentionStep(ctx), RefreshStep(ctx, "dialogs"), RefreshStep(ctx, "library"))
        attention, dialogs, library = self.beside
        steps: list[Step] = [
            self.leases,
            WorkersStep(ctx, self.watchdog),  # after the leases: a gateway standing by starts none
            ConnectStep(ctx),
            self.ingest,
            media,
            EventsStep(ctx),
            SchedulesStep(ctx),
            ConsolidationStep(ctx),
            TickStep(ctx, before_dispatch=media.run),
            PresenceStep(ctx),
            ReapRequestsStep(ctx),
            RequestsStep(ctx),
            SignInStep(ctx),
            StickersStep(ctx),
            library,
            dialogs,
            attention,  # starts the due unread scans as tasks of their own (engine/attention.py)
        ]
        #: Every step by name, in the order of a full pass.
        self.steps: dict[str, Step] = {step.name: step for step in steps}
        self._full = tuple(steps)
        self._turn = tuple(self.steps[name] for name in ("ingest", "tick", "presence"))
        self._turn_with_media = tuple(self.steps[name] for name in ("ingest", "media", "tick", "presence"))
        self._connections_checked_at: float | None = None  # monotonic; None: check at the first pass
        #: Whether the last pass's work left none for a pass right after it (`run_once`).
        self.settled = False
        self.pass_at: dt.datetime | None = None  # when run_once last finished, for the health row

    @property
    def clients(self) -> dict[int, AgentClient]:
        """The held clients by agent id (`GatewayContext.clients`)."""
        return self.context.clients

    # --- the loop -----------------------------------------------------------------------------------

    def follow_up_steps(self) -> tuple[Step, ...]:
        """The steps of a follow-up pass (see `run`): those the gateway's own work feeds. Ingest
        stores messages (their triggers, media to describe); the tick finishes nodes (the next ones
        of their graphs) and acts (the account is online). What else a pass looks at comes from
        other processes, which wake the gateway, or from timers, which its wait counts with."""
        return self._turn_with_media if self.ingest.ingested else self._turn

    def all_steps(self) -> tuple[Step, ...]:
        return self._full

    async def run_once(self, *, follow_up: bool = False) -> bool:
        """One pass over every step (a follow-up pass: over `follow_up_steps`); returns whether
        any did work, and sets `settled`."""
        self.context.pass_started = get_clock().monotonic()  # the pass's budget counts from here
        self.context.follow_up = follow_up
        if follow_up:
            steps = self.follow_up_steps()
        else:
            steps = self._full
            try:  # the global parameters an operator changed apply from this pass on (cindy_site/parameters.py)
                await sync_to_async(parameters_refresh)()
            except Exception as exc:
                logger.warning("could not read the global parameters, keeping the previous ones: %r", exc)
        stopping = self.context.stopping
        worked: list[str] = []
        try:
            for step in steps:
                if stopping.is_set():
                    break
                try:
                    if await step.run():
                        worked.append(step.name)
                except Exception:
                    logger.exception("gateway step %s failed", step.name)
        finally:
            self.context.pass_started = None
            self.context.follow_up = False
        await sync_to_async(self._close_old_connections)()
        self.pass_at = now()
        self.settled = self._settled(worked)
        return bool(worked)

    def _settled(self, worked: list[str]) -> bool:
        """Whether a pass that did `worked` (the names of the steps that did work) left none for a
        pass right after it: it stored messages at most, and the tick handed their turns to the workers
        and ran nothing else. The tick ran the media step for them before it did, and a worker's plan
        wakes the gateway when it is stored; what arrived meanwhile woke it for a turn already. Such a
        follow-up pass read everything again and found nothing (about 1.5 ms of CPU per message at 100
        agents)."""
        if self.context.wake is None:  # the wait would not end for a message that came meanwhile
            return False
        return "tick" in worked and set(worked) <= {"ingest", "tick"} and self.steps["tick"].only_planned

    async def _passes(self) -> None:
        """Passes until the stop signal. After a pass that did work another follows at once: a
        follow-up pass over the steps that work feeds (`follow_up_steps`), unless a wake-up for a
        full pass came meanwhile or `full_pass_seconds` (the idle pass with wake-ups working, else
        CINDY_TICK_SECONDS) went by since the last full pass, which make it a full one. After a
        pass that did nothing the gateway waits (engine/wake.py), then runs a full pass; or, woken
        for a turn only within `full_pass_seconds` of the last full pass, a follow-up pass (a
        person's message or a stored plan needs no backstop step)."""
        clock = get_clock()
        wakeup, idle = self.context.wakeup, self.idle
        full_at = clock.monotonic()
        follow_up = False
        while not self.context.stopping.is_set():
            if not follow_up:
                full_at = clock.monotonic()
            if not await self.run_once(follow_up=follow_up) or self.settled:
                period = idle.full_pass_seconds()
                # After a follow-up pass the wait ends by the time the next full pass is due.
                # After a settled pass a node that fell due since the tick looked is due at once (no
                # follow-up pass claims it); after any other pass the wait counts from its own reading.
                due_since = self.steps["tick"].read_at if self.settled else None
                reason = await idle.wait_for_work(
                    full_due=full_at + period if follow_up else None, due_since=due_since
                )
                follow_up = reason == "turn" and clock.monotonic() - full_at < period
                continue
            full = wakeup.full  # False unless set for a full pass since the last clear
            if wakeup.is_set():
                wakeup.clear()
            follow_up = not full and clock.monotonic() - full_at < idle.full_pass_seconds()

    def health_state(self) -> dict:
        """What the gateway's health row reports (engine/health.py)."""
        watchdog = self.watchdog
        state = {
            "pass_at": self.pass_at,
            "renewed_at": self.heartbeat.renewed_at,
            "held": len(self.context.clients),
            "stalled_since": watchdog.stalled_at if watchdog.stalled_agents else None,
        }
        if self.context.capacity is not None:
            state["capacity"] = self.context.capacity
        return state

    def _close_old_connections(self) -> None:
        """Django's `close_old_connections`, at most every CONNECTION_CHECK_SECONDS, and after any pass
        in which a database error occurred. A healthy connection stays open between passes:
        reconnecting at every pass (on SQLite with its PRAGMAs) cost as much as the rest of an idle pass.
        """
        at = get_clock().monotonic()
        checked = self._connections_checked_at
        if (
            checked is None
            or at - checked >= CONNECTION_CHECK_SECONDS
            or any(
                conn.errors_occurred
                or (conn.connection is not None and conn.get_autocommit() != conn.settings_dict["AUTOCOMMIT"])
                for conn in connections.all(initialized_only=True)
            )
        ):
            self._connections_checked_at = at
            close_old_connections()

    async def run(self) -> None:
        ctx = self.context
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        logger.info("gateway %s starting", self.gateway_id)
        try:
            gone = await sync_to_async(processes_forget_gone)(kind=ProcessHeartbeat.Kind.GATEWAY)
            if gone:
                logger.info("removed the health rows of gateways gone from this host: %s", ", ".join(gone))
        except Exception as exc:
            logger.warning("could not tidy the health rows: %r", exc)
        if ctx.capacity is not None:  # counted by the other --auto gateways from now on
            await sync_to_async(placement_register)(gateway_id=self.gateway_id, capacity=ctx.capacity)
            logger.info("placing agents automatically: capacity %d", ctx.capacity)
        # The heartbeat runs beside the steps, not between them: see engine/heartbeat.py.
        beside = [asyncio.create_task(self.heartbeat.forever(), name="lease heartbeat")]
        # Our own writes wake no gateway: after a pass that did work the loop runs another at once.
        with wake_not_needed():
            if ctx.wake is not None:
                await ctx.wake.start(ctx.wakeup)
            if ctx.capacity is not None:
                beside.append(asyncio.create_task(self.leases.take_forever(), name="placement"))
            try:
                await self._passes()
            finally:
                await _cancel(beside[1:])
                try:
                    await self.drain()
                finally:
                    await _cancel(beside[:1])
                    await self._forget_health_row()
                    if ctx.wake is not None:
                        await ctx.wake.stop()

    async def _forget_health_row(self) -> None:
        """Stopped cleanly: remove our health row (and our workers'), once no write of it is in flight."""
        if self.heartbeat.beat is not None:
            await asyncio.wait({self.heartbeat.beat})
        try:
            await sync_to_async(gateway_forget)(gateway_id=self.gateway_id)
            await sync_to_async(wake_gateway_forget)(self.gateway_id)
        except Exception as exc:
            logger.warning("could not remove the gateway's health row: %r", exc)

    def request_stop(self) -> None:
        if not self.context.stopping.is_set():
            logger.info("shutting down: finishing the action in flight, then releasing leases")
        self.context.stopping.set()
        self.context.wakeup.set()

    async def drain(self) -> None:
        """Stop the workers; then ingest each client's last updates, disconnect it and release its lease.

        The workers go first: once a lease is free, the next gateway re-plans this one's planning
        nodes at once, so none of this gateway's workers may still be running them. The heartbeat
        keeps renewing the leases not yet released while this runs.
        """
        ctx = self.context
        if ctx.capacity is not None:  # the other --auto gateways count us out, to take our agents
            try:
                await sync_to_async(gateway_drain_request)(gateway_id=self.gateway_id)
            except Exception as exc:
                logger.warning("could not mark the gateway draining: %r", exc)
        if ctx.workers is not None:
            await asyncio.to_thread(ctx.workers.stop)
        for step in self.beside:
            await step.stop()
        for agent_id in list(ctx.clients):
            try:
                await ctx.drop(agent_id, "gateway stopped", flush=True)
            except Exception:
                logger.exception("could not release agent %s cleanly", agent_id)
        await sync_to_async(lease_release)(holder=self.gateway_id)
        if ctx.capacity is not None:
            await sync_to_async(wake_gateways)(force=True)
        logger.info("gateway %s stopped", self.gateway_id)


async def _cancel(tasks: list[asyncio.Task]) -> None:
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
