"""The gateway (`manage.py runagents`): one asyncio loop driving the Telegram clients of the agents it
holds, ingesting their updates and running the tick.

It follows the sendalerts skeleton: each `step_*` coroutine does one unit of work and returns whether
it did any; the loop is thin; a signal only sets the shutdown event, the step in flight (a Telegram
action included) finishes, and `drain` releases leases before exit. All ORM work runs in a thread via
`sync_to_async`; the LLM is never called here (planning is enqueued on django-q2 workers).
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

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connections

from agents.models import Agent
from agents.selectors import agents_wanted_rows, phone_key, shared_phone_keys
from cindy_site.clock import get_clock, now
from conversations.models import ActivityEvent, TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.services.activity import record_event
from conversations.services.nodes import node_release, nodes_reap_expired, nodes_take_over
from conversations.services.parameters import parameters_refresh
from conversations.services.wake import wake_gateway_forget, wake_gateways, wake_not_needed
from conversations.transport.base import AuthError, Transport
from engine.attention import AttentionSteps
from engine.clients import AgentClient, clients_quiet
from engine.dispatch import PlanningDispatch, enqueue_received
from engine.health import gateway_forget, processes_forget_gone
from engine.heartbeat import LeaseKeeper
from engine.ingest import ingest_updates, reconcile
from engine.initiative_steps import InitiativeSteps
from engine.leases import (
    agent_offline_unless_held,
    agent_stop,
    lease_acquire,
    lease_release,
    phone_refusal,
    record_phone_refusal,
)
from engine.models import ProcessHeartbeat
from engine.placement import gateway_drain_request, placement_plan, placement_register
from engine.presence import PresenceSteps
from engine.requests import execute_request, request_finish, requests_claim, requests_pending_agents
from engine.responsiveness import agents_asleep
from engine.runner import run_node
from engine.signin import SignInSteps
from engine.stickers import sticker_access_record_premium
from engine.tick import Ticker
from engine.transports import transport_for
from engine.upkeep import UpkeepSteps
from engine.wake import Wakeup, WakeWaits, wake_listener
from engine.watchdog import PlanningWatchdog

logger = logging.getLogger("engine.gateway")
Kind = ActivityEvent.Kind
#: How long a client being released may take to hand over the updates it already received.
FLUSH_SECONDS = 5
#: --auto: how often free leases are taken beside the step loop (besides at every pass).
PLACEMENT_SECONDS = 1.0
#: How long one pass may spend connecting clients (the rest connect in the passes that follow).
CONNECT_BUDGET_SECONDS = 2.0
#: How often a pass ends with Django's check of the database connections (close_old_connections).
CONNECTION_CHECK_SECONDS = 60.0
#: How often the tick looks for running nodes whose lease expired (at most a tenth of the lease).
NODE_REAP_SECONDS = 5.0


def default_gateway_id() -> str:
    name = settings.CINDY_GATEWAY_NAME or socket.gethostname()
    return f"{name}:{os.getpid()}:{secrets.token_hex(3)}"


class Gateway(
    LeaseKeeper,
    UpkeepSteps,
    SignInSteps,
    PlanningWatchdog,
    InitiativeSteps,
    WakeWaits,
    PlanningDispatch,
    AttentionSteps,
    PresenceSteps,
):
    def __init__(
        self,
        *,
        names: Iterable[str] = (),
        gateway_id: str | None = None,
        transport_factory: Callable[..., Transport] = transport_for,
        enqueue: Callable[[int, str], None] = enqueue_received,
        workers=None,
        tick_seconds: float | None = None,
        isolated_heartbeat: bool = True,
        capacity: int | None = None,
    ) -> None:
        self.names = list(names)
        self.gateway_id = gateway_id or default_gateway_id()
        #: `runagents --auto`: the most agents this gateway takes, sharing them with the other
        #: --auto gateways (engine/placement.py). None: it takes every agent it may (or `names`).
        self.capacity = capacity
        self.draining = False
        self._placing = asyncio.Lock()  # step_leases and placement_forever take leases one at a time
        self.transport_factory = transport_factory
        self.enqueue = enqueue
        self.workers = workers
        self.tick_seconds = tick_seconds if tick_seconds is not None else settings.CINDY_TICK_SECONDS
        self.idle_pass_seconds = settings.CINDY_IDLE_PASS_SECONDS  # with wake-ups: engine/wake.py
        self.clients: dict[int, AgentClient] = {}
        self.refusals: dict[int, str] = {}
        #: Set while every agent this gateway may drive is held by another: what it logged about it.
        self.standing_by = ""
        self._workers_started = False
        self.ticker = Ticker(gateway_id=self.gateway_id)
        self._reaped_at = float("-inf")  # monotonic time of the last look for expired node leases
        self._ingested = False  # whether the last ingest step stored anything (`_follow_up_steps`)
        self.stopping = asyncio.Event()
        self.wakeup = Wakeup()  # set by wake-ups, transports' updates and request_stop (engine/wake.py)
        self.wake = wake_listener(self.gateway_id)
        self.isolated_heartbeat = isolated_heartbeat
        self._last_heartbeat = 0.0
        self._renewal: asyncio.Future | None = None
        # The last pass's enabled agents: id → (row as the driver returned it, the Agent built from it).
        self._agent_rows: dict[int, tuple[tuple, Agent]] = {}
        self._connections_checked_at: float | None = None  # monotonic; None: check at the first pass
        self.pass_at: dt.datetime | None = None  # when run_once last finished, for the health row

    # --- leases -----------------------------------------------------------------------------------

    def _wanted_agents(self) -> list[Agent]:
        """The enabled, not stopped agents (of `names`), in name order, as the database has them now.

        Each pass reads every row, so an admin edit reaches the held client at the next pass. The
        rows are read as the driver returns them and compared with the last pass's; only a new or
        changed row is built into an `Agent` (building every agent's model at every pass was most of
        the cost of an idle pass).
        """
        rows = agents_wanted_rows(names=self.names)  # plain SQL, driver rows (agents/selectors.py)
        known = self._agent_rows
        changed = {row[0] for row in rows if row[0] not in known or known[row[0]][0] != row}
        fresh = Agent.objects.in_bulk(changed) if changed else {}
        current: dict[int, tuple[tuple, Agent]] = {}
        for row in rows:
            if row[0] in fresh:
                current[row[0]] = (row, fresh[row[0]])
            elif row[0] not in changed:  # unchanged since the last pass
                current[row[0]] = known[row[0]]
        self._agent_rows = current
        return [agent for _, agent in current.values()]

    async def step_leases(self) -> bool:
        """Take the leases of wanted agents we do not drive yet; drop agents no longer wanted.

        With a capacity (`--auto`), only this gateway's share is taken, and a surplus is handed back
        (engine/placement.py)."""
        async with self._placing:
            return await self._step_leases(claim_only=False)

    async def placement_forever(self) -> None:
        """--auto: take free leases up to our share every PLACEMENT_SECONDS, beside the step loop, so
        a long pass (a hundred agents connecting, a burst of messages) does not delay the takeover of
        a lost gateway's agents. It only takes: dropping and handing back stay between passes, where
        no action is in flight."""
        while True:
            await asyncio.sleep(PLACEMENT_SECONDS)
            if self.stopping.is_set():
                return
            try:
                async with self._placing:
                    await self._step_leases(claim_only=True)
            except Exception as exc:  # the database is away: the pass's own step says so too
                logger.warning("taking leases between passes failed: %r", exc)

    async def _step_leases(self, *, claim_only: bool) -> bool:
        did = False
        wanted = {a.pk: a for a in await sync_to_async(self._wanted_agents)()}
        for agent_id in [a for a in self.clients if a not in wanted and not claim_only]:
            await self._drop(agent_id, "agent disabled or stopped", flush=True)
            did = True
        allowed: dict[int, None] | None = None  # --auto: the agents to try, in order
        need = 0
        if self.capacity is not None:
            placement = await sync_to_async(placement_plan)(
                gateway_id=self.gateway_id,
                capacity=self.capacity,
                wanted=list(wanted),
                held=list(self.clients),
            )
            if not claim_only:
                await self._hand_back(placement.hand_back, draining=placement.draining)
                did = did or bool(placement.hand_back)
            allowed = dict.fromkeys(placement.take)
            need = placement.need
        shared_phones: set[str] | None = None
        for agent_id, agent in wanted.items():
            if agent_id in self.clients:
                self.clients[agent_id].agent = agent  # pick up admin edits (schedule, typing speed...)
        for agent_id, agent in wanted.items() if allowed is None else ((a, wanted[a]) for a in allowed):
            if agent_id in self.clients:
                continue
            if allowed is not None and need <= 0:
                break
            if shared_phones is None:  # read once per pass, and only when an agent is not held yet
                shared_phones = await sync_to_async(shared_phone_keys)()
            refusal = None
            if phone_key(agent.phone) in shared_phones:
                refusal = await sync_to_async(phone_refusal)(agent=agent, holding=set(self.clients))
            if refusal is not None:
                if self.refusals.get(agent_id) != refusal.holder:
                    logger.warning("refused: %s", refusal.message)
                    self.refusals[agent_id] = refusal.holder
                    await sync_to_async(record_phone_refusal)(agent_id=agent_id, message=refusal.message)
                continue
            taken_at = get_clock().monotonic()  # the lease runs from no earlier than this
            result = await sync_to_async(lease_acquire)(agent=agent, holder=self.gateway_id)
            if not result.acquired:
                if self.capacity is not None:  # --auto: another gateway took it first, as it may
                    logger.info("agent %s: taken by gateway %s first", agent.name, result.holder)
                    continue
                # Logged once per holder: the message's heartbeat time changes at every renewal.
                if self.refusals.get(agent_id) != result.holder:
                    logger.warning("refused: %s", result.message)
                    self.refusals[agent_id] = result.holder
                continue
            self.refusals.pop(agent_id, None)
            # With our own task workers, the previous gateway's workers died with it (parent-death
            # signal), so its planning nodes can be planned again at once instead of after their lease.
            # A lease handed back by a live --auto gateway (not expired) leaves its workers running:
            # their planning nodes finish there, or are reaped when their node lease expires.
            include_brain = self.workers is not None and (self.capacity is None or bool(result.message))
            # Held from here on (the heartbeat renews the lease), even if the step below fails.
            self.clients[agent_id] = AgentClient(agent, self._new_transport(agent), renewed_at=taken_at)
            need -= 1
            did = True
            try:
                released = await sync_to_async(nodes_take_over)(
                    agent_id=agent_id, gateway_id=self.gateway_id, include_brain=include_brain
                )
            except Exception as exc:  # the reaper returns them when their node leases expire
                released = 0
                logger.warning(
                    "agent %s: could not return the previous gateway's running nodes to pending now "
                    "(they go back when their node leases expire): %r",
                    agent.name,
                    exc,
                )
            logger.info(
                "holding agent %s%s%s",
                agent.name,
                f" ({result.message})" if result.message else "",
                f"; {released} node(s) returned to pending" if released else "",
            )
        if self.capacity is None:
            self._report_standby(wanted)
        return did

    async def _hand_back(self, agent_ids: list[int], *, draining: bool) -> None:
        """Release agents for other --auto gateways to take: their received updates ingested first,
        then the other gateways woken (our own writes wake nobody)."""
        if draining != self.draining:
            logger.info(
                "draining: handing back every agent"
                if draining
                else "no longer draining: taking agents again"
            )
            self.draining = draining
        if not agent_ids:
            return
        reason = "gateway draining" if draining else "handed to another gateway to even out the counts"
        for agent_id in agent_ids:
            await self._drop(agent_id, reason, flush=True)
        await sync_to_async(wake_gateways)(force=True)
        logger.info("handed back %d agent(s); holding %d", len(agent_ids), len(self.clients))

    def _report_standby(self, wanted: dict[int, Agent]) -> None:
        """Say once (again when the holders change) that every agent we may drive is held elsewhere.

        Such a gateway stands by: it starts no task workers (the holders' plan for those agents) and
        takes each agent over when its holder releases the lease or lets it expire.
        """
        refused = {agent_id: self.refusals.get(agent_id) for agent_id in wanted}
        if self.clients or not wanted or not all(refused.values()):
            if self.standing_by and self.clients:
                logger.info(
                    "no longer standing by: holding %s",
                    ", ".join(c.agent.name for c in self.clients.values()),
                )
            self.standing_by = ""
            return
        held = ", ".join(f"{wanted[agent_id].name} by {holder}" for agent_id, holder in refused.items())
        message = (
            f"nothing to do: every agent this gateway may drive is held by another gateway ({held}); "
            "standing by without task workers, to take each over when its gateway stops or its lease "
            "expires. To run them here, stop that gateway"
        )
        if message != self.standing_by:
            logger.warning("%s", message)
            self.standing_by = message

    def _new_transport(self, agent: Agent) -> Transport:
        """The agent's transport; one that receives updates on its own wakes the loop through them."""
        transport = self.transport_factory(agent, gateway_id=self.gateway_id)
        if self.wake is not None and hasattr(transport, "on_update"):
            transport.on_update = self.on_update
        return transport

    async def _drop(
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
        if flush and client.connected:
            await self._flush_updates(client)
        await self._quiet_disconnect(client)
        if release:
            await self._db(lease_release, isolated=isolated)(holder=self.gateway_id, agent_ids=[agent_id])
            await self._db(record_event, isolated=isolated)(
                Kind.AGENT_OFFLINE, agent_id=agent_id, summary=reason
            )
        else:  # fenced or lost: another gateway may drive the agent already
            await self._db(agent_offline_unless_held, isolated=isolated)(
                agent_id=agent_id, gateway_id=self.gateway_id, reason=reason
            )
        logger.info("released agent %s: %s", client.agent.name, reason)

    @staticmethod
    async def _flush_updates(client: AgentClient) -> None:
        """Poll and ingest once more before a disconnect, bounded by FLUSH_SECONDS; failures are logged."""
        try:
            updates = await asyncio.wait_for(client.transport.poll_updates(), FLUSH_SECONDS)
            if updates:
                await sync_to_async(ingest_updates)(agent_id=client.agent.pk, updates=updates)
        except Exception as exc:  # the reconciler of the next gateway fetches missed messages again
            logger.warning("agent %s: could not ingest its last updates: %r", client.agent.name, exc)

    @staticmethod
    async def _quiet_disconnect(client: AgentClient) -> None:
        try:
            await client.transport.disconnect()
        except Exception as exc:  # a broken connection must not block a drop or a reconnect
            logger.info("agent %s: disconnect failed: %r", client.agent.name, exc)

    # --- connections ------------------------------------------------------------------------------

    async def step_connect(self) -> bool:
        """Connect (or reconnect, after backoff) each held client, then fill gaps from history.

        A pass that has spent CONNECT_BUDGET_SECONDS connecting leaves the rest to the next pass
        (which follows at once): a gateway taking over a hundred agents keeps ticking the ones it
        drives and taking the leases that expire meanwhile, instead of connecting them all first."""
        did = False
        started = get_clock().monotonic()
        for agent_id, client in list(self.clients.items()):
            if client.connected or get_clock().monotonic() < client.retry_at:
                continue
            if did and get_clock().monotonic() - started >= CONNECT_BUDGET_SECONDS:
                break
            did = True
            try:
                if client.failures:
                    await self._quiet_disconnect(client)
                account = await client.transport.connect()
                await sync_to_async(self._record_account)(agent_id, account.user_id, account.username)
                await sync_to_async(sticker_access_record_premium)(agent_id=agent_id, premium=account.premium)
                fetched = await reconcile(agent_id=agent_id, transport=client.transport)
            except AuthError as exc:
                await self._stop_agent(agent_id, exc)
                continue
            except Exception as exc:
                client.fail(exc)
                continue
            if client.dropped:  # fenced or released while connecting: this connection must not stay
                await self._quiet_disconnect(client)
                continue
            client.connected, client.failures = True, 0
            await sync_to_async(record_event)(
                Kind.AGENT_ONLINE,
                agent_id=agent_id,
                summary=f"online via {self.gateway_id}"
                + (f"; caught up {fetched} messages" if fetched else ""),
            )
        return did

    @staticmethod
    def _record_account(agent_id: int, user_id: int, username: str) -> None:
        """Remember the account's user id (and username, if none is set) as the transport reports them."""
        Agent.objects.filter(pk=agent_id).exclude(telegram_user_id=user_id).update(telegram_user_id=user_id)
        if username:
            Agent.objects.filter(pk=agent_id, telegram_username="").update(telegram_username=username)

    async def _stop_agent(self, agent_id: int, exc: AuthError) -> None:
        if exc.reason == "NOT_READY":  # not logged in or no credentials: the message says what to do
            reason = str(exc)
        else:
            reason = f"Telegram refused the session: {exc.reason}"
        await sync_to_async(agent_stop)(agent_id=agent_id, reason=reason, error=str(exc))
        await self._drop(agent_id, f"stopped: {exc.reason}")

    async def step_ingest(self) -> bool:
        did = False
        connected = [client for client in self.clients.values() if client.connected]
        quiet = await sync_to_async(clients_quiet)(connected) if connected else set()
        for agent_id, client in list(self.clients.items()):
            if not client.connected or agent_id in quiet:
                continue
            try:
                updates = await client.transport.poll_updates()
            except AuthError as exc:
                await self._stop_agent(agent_id, exc)
                continue
            except Exception as exc:
                client.fail(exc)
                continue
            if updates:
                did = True
                try:
                    await sync_to_async(ingest_updates)(agent_id=agent_id, updates=updates)
                except Exception as exc:
                    # The batch was rolled back as a whole (messages and replans, engine/ingest.py)
                    # and the transport's cursor has moved past it: reconnect, so that the
                    # reconciler fetches its messages again from history and evaluates their
                    # triggers. Edits, deletions and reactions in it are not in history.
                    logger.exception("agent %s: ingest failed", client.agent.name)
                    client.fail(exc)
        self._ingested = did  # a follow-up pass looks for media only after messages came
        return did

    # --- the tick -----------------------------------------------------------------------------------

    def _claim_tick(self, clients: list[tuple[int, AgentClient]]) -> tuple[int, list[tuple[TaskNode, str]]]:
        """Reap expired node leases of the held agents, then claim this tick's nodes of the active ones.

        One trip to the database thread; `clients` is a snapshot taken on the loop (the heartbeat may
        drop a client meanwhile).
        """
        held = [agent_id for agent_id, _ in clients]
        reaped = 0
        at = get_clock().monotonic()
        if held and at - self._reaped_at >= min(NODE_REAP_SECONDS, settings.CINDY_NODE_LEASE_SECONDS / 10):
            self._reaped_at = at
            reaped = nodes_reap_expired(agent_ids=held)
        # Agents whose nodes may run now: connected, not paused by a flood wait, and awake; whether
        # one is asleep is asked only of those with a node to start (`Ticker.candidates`).
        when = now()
        agents = {
            agent_id: client.agent
            for agent_id, client in clients
            if client.connected and (client.paused_until is None or client.paused_until <= when)
        }
        if not agents:
            return reaped, []

        def asleep(agent_ids: set[int]) -> set[int]:
            return agents_asleep(agents=[agents[agent_id] for agent_id in agent_ids], at=when)

        return reaped, self.ticker.claim(agent_ids=list(agents), agents=agents, asleep=asleep)

    async def step_tick(self) -> bool:
        """Reap expired node leases, claim this tick's nodes, dispatch brain kinds, run Telegram kinds."""
        reaped, claimed = await sync_to_async(self._claim_tick)(list(self.clients.items()))
        brains = [(node, owner) for node, owner in claimed if node.kind in BRAIN_KINDS]
        if brains:
            # The workers describe media from the bytes the gateway stored: fetch what came since
            # the media step, e.g. messages an unread scan (a task of its own) stored meanwhile.
            await self.step_media()
            await self._dispatch_brains(brains)  # engine/dispatch.py
        actions = [self._run_action(node, owner) for node, owner in claimed if node.kind not in BRAIN_KINDS]
        if actions:
            await asyncio.gather(*actions)
        return bool(reaped or claimed)

    async def _run_action(self, node: TaskNode, owner: str) -> None:
        client = self.clients.get(node.agent_id)
        if client is None:
            await sync_to_async(node_release)(node_id=node.pk, owner=owner, reason="agent no longer held")
            return
        try:
            result = await run_node(node=node, owner=owner, transport=client.transport)
        except Exception:  # one conversation's failure never stops the others
            logger.exception("agent %s: node %s crashed the runner", client.agent.name, node.pk)
            return
        if result.outcome == "flood":
            client.paused_until = result.flood_until
        elif result.outcome == "auth":
            await self._drop(node.agent_id, "stopped: authorization failed")

    # --- requests -----------------------------------------------------------------------------------

    async def step_requests(self) -> bool:
        did = False
        connected = [agent_id for agent_id, client in self.clients.items() if client.connected]
        pending = await sync_to_async(requests_pending_agents)(agent_ids=connected)
        for agent_id, client in list(self.clients.items()):
            if not client.connected or agent_id not in pending:
                continue
            for request in await sync_to_async(requests_claim)(agent_id=agent_id, holder=self.gateway_id):
                did = True
                result, error = await execute_request(request, client.transport)
                await sync_to_async(request_finish)(request_id=request.pk, result=result, error=error)
        return did

    async def step_workers(self) -> bool:
        """Check that planning moves (engine/watchdog.py), then (re)start our task workers if needed."""
        did = await self.step_watchdog()
        if self.workers is None:
            return did
        if self.standing_by and not self._workers_started:
            return did  # standing by: the gateways holding our agents plan for them
        self._workers_started = True
        # On the loop's (main) thread, never a pool thread: the child's parent-death signal
        # (PR_SET_PDEATHSIG) fires when the thread that started it ends, which must be the gateway's.
        return self.workers.step() or did

    # --- the loop -----------------------------------------------------------------------------------

    def _follow_up_steps(self) -> tuple:
        """The steps of a follow-up pass (see `run`): those the gateway's own work feeds. Ingest
        stores messages (their triggers, media to describe); the tick finishes nodes (the next ones
        of their graphs) and acts (the account is online). What else a pass looks at comes from
        other processes, which wake the gateway, or from timers, which its wait counts with."""
        if self._ingested:
            return (self.step_ingest, self.step_media, self.step_tick, self.step_presence)
        return (self.step_ingest, self.step_tick, self.step_presence)

    async def run_once(self, *, follow_up: bool = False) -> bool:
        """One pass over every step (a follow-up pass: over `_follow_up_steps`); returns whether
        any did work."""
        did = False
        if follow_up:
            steps = self._follow_up_steps()
        else:
            steps = self._all_steps()
            try:  # the global parameters an operator changed apply from this pass on (cindy_site/parameters.py)
                await sync_to_async(parameters_refresh)()
            except Exception as exc:
                logger.warning("could not read the global parameters, keeping the previous ones: %r", exc)
        for step in steps:
            if self.stopping.is_set():
                break
            try:
                did = await step() or did
            except Exception:
                logger.exception("gateway step %s failed", step.__name__)
        await sync_to_async(self._close_old_connections)()
        self.pass_at = now()
        return did

    def _all_steps(self) -> tuple:
        return (
            self.step_leases,
            self.step_workers,  # after the leases: a gateway standing by starts none
            self.step_connect,
            self.step_ingest,
            self.step_media,
            self.step_events,
            self.step_schedules,
            self.step_tick,
            self.step_presence,
            self.step_reap_requests,
            self.step_requests,
            self.step_signin,
            self.step_stickers,
            self.step_library,
            self.step_dialogs,
            self.step_attention,  # starts the due unread scans as tasks of their own (engine/attention.py)
        )

    async def _passes(self) -> None:
        """Passes until the stop signal. After a pass that did work another follows at once: a
        follow-up pass over the steps that work feeds (`_follow_up_steps`), unless a wake-up for a
        full pass came meanwhile or `full_pass_seconds` (the idle pass with wake-ups working, else
        CINDY_TICK_SECONDS) went by since the last full pass, which make it a full one. After a
        pass that did nothing the gateway waits (engine/wake.py), then runs a full pass; or, woken
        for a turn only within `full_pass_seconds` of the last full pass, a follow-up pass (a
        person's message or a stored plan needs no backstop step)."""
        clock = get_clock()
        full_at = clock.monotonic()
        follow_up = False
        while not self.stopping.is_set():
            if not follow_up:
                full_at = clock.monotonic()
            if not await self.run_once(follow_up=follow_up):
                period = self.full_pass_seconds()
                # After a follow-up pass the wait ends by the time the next full pass is due.
                reason = await self.wait_for_work(full_due=full_at + period if follow_up else None)
                follow_up = reason == "turn" and clock.monotonic() - full_at < period
                continue
            full = self.wakeup.full  # False unless set for a full pass since the last clear
            if self.wakeup.is_set():
                self.wakeup.clear()
            follow_up = not full and clock.monotonic() - full_at < self.full_pass_seconds()

    def health_state(self) -> dict:
        """What the gateway's health row reports (engine/health.py)."""
        watchdog = self._watchdog_state()
        state = {
            "pass_at": self.pass_at,
            "renewed_at": self.renewed_at,
            "held": len(self.clients),
            "stalled_since": watchdog["stalled_at"] if watchdog["stalled_agents"] else None,
        }
        if self.capacity is not None:
            state["capacity"] = self.capacity
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
        if self.capacity is not None:  # counted by the other --auto gateways from now on
            await sync_to_async(placement_register)(gateway_id=self.gateway_id, capacity=self.capacity)
            logger.info("placing agents automatically: capacity %d", self.capacity)
        # The heartbeat runs beside the steps, not between them: see engine/heartbeat.py.
        heartbeat = asyncio.create_task(self.heartbeat_forever(), name="lease heartbeat")
        # Our own writes wake no gateway: after a pass that did work the loop runs another at once.
        with wake_not_needed():
            if self.wake is not None:
                await self.wake.start(self.wakeup)
            placing = None
            if self.capacity is not None:
                placing = asyncio.create_task(self.placement_forever(), name="placement")
            try:
                await self._passes()
            finally:
                if placing is not None:
                    placing.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await placing
                try:
                    await self.drain()
                finally:
                    heartbeat.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await heartbeat
                    await self._forget_health_row()
                    if self.wake is not None:
                        await self.wake.stop()

    async def _forget_health_row(self) -> None:
        """Stopped cleanly: remove our health row (and our workers'), once no write of it is in flight."""
        if self._beat is not None:
            await asyncio.wait({self._beat})
        try:
            await sync_to_async(gateway_forget)(gateway_id=self.gateway_id)
            await sync_to_async(wake_gateway_forget)(self.gateway_id)
        except Exception as exc:
            logger.warning("could not remove the gateway's health row: %r", exc)

    def request_stop(self) -> None:
        if not self.stopping.is_set():
            logger.info("shutting down: finishing the action in flight, then releasing leases")
        self.stopping.set()
        self.wakeup.set()

    async def drain(self) -> None:
        """Stop the workers; then ingest each client's last updates, disconnect it and release its lease.

        The workers go first: once a lease is free, the next gateway re-plans this one's planning
        nodes at once, so none of this gateway's workers may still be running them. The heartbeat
        keeps renewing the leases not yet released while this runs.
        """
        if self.capacity is not None:  # the other --auto gateways count us out, to take our agents
            try:
                await sync_to_async(gateway_drain_request)(gateway_id=self.gateway_id)
            except Exception as exc:
                logger.warning("could not mark the gateway draining: %r", exc)
        if self.workers is not None:
            await asyncio.to_thread(self.workers.stop)
        await self.attention_stop()
        await self.upkeep_stop()
        for agent_id in list(self.clients):
            try:
                await self._drop(agent_id, "gateway stopped", flush=True)
            except Exception:
                logger.exception("could not release agent %s cleanly", agent_id)
        await sync_to_async(lease_release)(holder=self.gateway_id)
        if self.capacity is not None:
            await sync_to_async(wake_gateways)(force=True)
        logger.info("gateway %s stopped", self.gateway_id)
