"""The tick step and the request step: the work the gateway claims from the database and runs.

`TickStep` reaps expired node leases, claims this tick's nodes (engine/tick.py), hands the planning
ones to the dispatcher (engine/dispatch.py) and runs the Telegram ones (engine/runner.py).
`RequestsStep` runs the gateway requests (OTP, sticker imports, profile refreshes...) of the held
agents (engine/requests.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable

from asgiref.sync import sync_to_async
from django.conf import settings

from cindy_site.clock import get_clock, now
from conversations.models import TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.selectors import pending_nodes_due
from conversations.services.nodes import node_release, nodes_reap_expired
from engine.clients import AgentClient
from engine.dispatch import PlanningDispatch
from engine.gateway_context import GatewayContext
from engine.requests import execute_request, request_finish, requests_claim, requests_pending_agents
from engine.responsiveness import agents_asleep
from engine.runner import run_node
from engine.tick import MAX_NODES_PER_TICK, Ticker

logger = logging.getLogger("engine.gateway")

#: How often the tick looks for running nodes whose lease expired (at most a tenth of the lease).
NODE_REAP_SECONDS = 5.0


class TickStep:
    name = "tick"

    def __init__(self, context: GatewayContext, *, before_dispatch: Callable[[], Awaitable[bool]]) -> None:
        self.context = context
        self.ticker = Ticker(gateway_id=context.gateway_id)
        self.dispatch = PlanningDispatch(context)
        #: Run before planning is dispatched: the media step, so the workers find the media's bytes.
        self.before_dispatch = before_dispatch
        self._reaped_at = float("-inf")  # monotonic time of the last look for expired node leases
        #: Whether the last run only handed planning to the workers (after the media step): nothing it
        #: did makes a node due at once, the workers' plans wake the gateway when they are stored.
        self.only_planned = False
        #: When the last run looked for due nodes (the wall clock, no later than the claim's own reading).
        self.read_at: dt.datetime | None = None

    def claim(self, clients: list[tuple[int, AgentClient]]) -> tuple[int, list[tuple[TaskNode, str]]]:
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
        when = now()
        # The cheap first test of an idle tick, over every held agent, before the walk over the
        # clients below: most passes (a message's second follow-up pass, the idle passes) end here.
        if not held or not pending_nodes_due(agent_ids=held, at=when):
            return reaped, []
        # Agents whose nodes may run now: connected, not paused by a flood wait, and awake; whether
        # one is asleep is asked only of those with a node to start (`Ticker.candidates`).
        agents = {
            agent_id: client.agent
            for agent_id, client in clients
            if client.connected and (client.paused_until is None or client.paused_until <= when)
        }
        if not agents:
            return reaped, []

        def asleep(agent_ids: set[int]) -> set[int]:
            return agents_asleep(agents=[agents[agent_id] for agent_id in agent_ids], at=when)

        # The first test was over every held agent: asked again only when some of them may not run now
        # (disconnected, paused), whose due nodes alone must not cost a full scan at every pass.
        return reaped, self.ticker.claim(
            agent_ids=list(agents), agents=agents, asleep=asleep, due_known=len(agents) == len(held)
        )

    async def run(self) -> bool:
        """Reap expired node leases, claim this tick's nodes, dispatch brain kinds, run Telegram kinds."""
        self.read_at = now()
        reaped, claimed = await sync_to_async(self.claim)(list(self.context.clients.items()))
        brains = [(node, owner) for node, owner in claimed if node.kind in BRAIN_KINDS]
        # Planning only, and all of it: fewer than a tick's cap, the candidates read to their end.
        self.only_planned = (
            bool(brains)
            and not reaped
            and len(brains) == len(claimed)
            and len(claimed) < MAX_NODES_PER_TICK
            and not self.ticker.partial
        )
        if brains:
            # The workers describe media from the bytes the gateway stored: fetch what came since
            # the media step, e.g. messages an unread scan (a task of its own) stored meanwhile.
            if await self.before_dispatch():  # downloads made: more may wait past the pass's budget
                self.only_planned = False
            await self.dispatch.dispatch(brains)
        actions = [self._run_action(node, owner) for node, owner in claimed if node.kind not in BRAIN_KINDS]
        if actions:
            await asyncio.gather(*actions)
        return bool(reaped or claimed)

    async def _run_action(self, node: TaskNode, owner: str) -> None:
        client = self.context.clients.get(node.agent_id)
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
            await self.context.drop(node.agent_id, "stopped: authorization failed")


class RequestsStep:
    name = "requests"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    async def run(self) -> bool:
        ctx = self.context
        did = False
        connected = [agent_id for agent_id, client in ctx.clients.items() if client.connected]
        pending = await sync_to_async(requests_pending_agents)(agent_ids=connected)
        for agent_id, client in list(ctx.clients.items()):
            if not client.connected or agent_id not in pending:
                continue
            for request in await sync_to_async(requests_claim)(agent_id=agent_id, holder=ctx.gateway_id):
                did = True
                result, error = await execute_request(request, client.transport)
                await sync_to_async(request_finish)(request_id=request.pk, result=result, error=error)
        return did
