"""The lease step: which agents this gateway drives.

Each pass it reads the enabled agents, drops those no longer wanted, takes the leases of the wanted
ones it does not hold yet (engine/leases.py), and with a capacity (`runagents --auto`) takes only its
share and hands a surplus back (engine/placement.py). Its own state: the refusals it logged, the last
pass's agent rows, and the lock that keeps it and `take_forever` from taking leases at once.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async

from agents.models import Agent
from agents.selectors import WANTED_ROW_UPDATED, agents_wanted_rows, phone_key, shared_phone_keys
from cindy_site.clock import get_clock
from conversations.services.nodes import nodes_take_over
from conversations.services.wake import wake_gateways
from engine.clients import AgentClient
from engine.gateway_context import GatewayContext
from engine.leases import lease_acquire, phone_refusal, record_phone_refusal
from engine.placement import placement_plan

logger = logging.getLogger("engine.gateway")

#: --auto: how often free leases are taken beside the step loop (besides at every pass).
PLACEMENT_SECONDS = 1.0
#: How often the lease step reads every wanted agent's whole row, not only the rows whose `updated`
#: stamp changed (a write that set no stamp, such as plain SQL, is seen within this).
FULL_READ_SECONDS = 60.0


class LeasesStep:
    name = "leases"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context
        #: Agent id → the holder that refused us, as last logged (logged again when it changes).
        self.refusals: dict[int, str] = {}
        # The last pass's enabled agents: id → (row as the driver returned it, the Agent built from it).
        self._agent_rows: dict[int, tuple[tuple, Agent]] = {}
        self._read_all_at: float | None = None  # monotonic: the last read of every whole row
        self._placing = asyncio.Lock()  # `run` and `take_forever` take leases one at a time

    async def run(self) -> bool:
        """Take the leases of wanted agents we do not drive yet; drop agents no longer wanted.

        With a capacity (`--auto`), only this gateway's share is taken, and a surplus is handed back
        (engine/placement.py)."""
        async with self._placing:
            return await self._take(claim_only=False)

    async def take_forever(self) -> None:
        """--auto: take free leases up to our share every PLACEMENT_SECONDS, beside the step loop, so
        a long pass (a hundred agents connecting, a burst of messages) does not delay the takeover of
        a lost gateway's agents. It only takes: dropping and handing back stay between passes, where
        no action is in flight."""
        while True:
            await asyncio.sleep(PLACEMENT_SECONDS)
            if self.context.stopping.is_set():
                return
            try:
                async with self._placing:
                    await self._take(claim_only=True)
            except Exception as exc:  # the database is away: the pass's own step says so too
                logger.warning("taking leases between passes failed: %r", exc)

    def wanted_agents(self) -> list[Agent]:
        """The enabled, not stopped agents (of `names`), in name order, as the database has them now.

        Each pass reads every wanted agent's id and `updated` stamp, and the whole rows of the agents
        whose stamp changed, so an admin edit (and any `Agent.objects...update()`, which stamps too:
        agents/models/agent.py) reaches the held client at the next pass; every FULL_READ_SECONDS it
        reads every whole row instead. Only a new or changed row is built into an `Agent` (building
        every agent's model at every pass was most of the cost of an idle pass).
        """
        names = self.context.names
        known = self._agent_rows
        clock = get_clock().monotonic()
        if self._read_all_at is None or clock - self._read_all_at >= FULL_READ_SECONDS:
            self._read_all_at = clock
            rows = agents_wanted_rows(names=names)  # plain SQL, driver rows (agents/selectors.py)
            order = [row[0] for row in rows]
            read = {row[0]: row for row in rows if row[0] not in known or known[row[0]][0] != row}
        else:
            stamps = agents_wanted_rows(names=names, stamps=True)
            order = [agent_id for agent_id, _ in stamps]
            stale = {i for i, stamp in stamps if i not in known or known[i][0][WANTED_ROW_UPDATED] != stamp}
            read = {row[0]: row for row in agents_wanted_rows(names=names, ids=stale)} if stale else {}
            order = [i for i in order if i in read or i not in stale]  # disabled between the two reads: out
        fresh = Agent.objects.in_bulk(list(read)) if read else {}
        current: dict[int, tuple[tuple, Agent]] = {}
        for agent_id in order:
            if agent_id in fresh:
                current[agent_id] = (read[agent_id], fresh[agent_id])
            elif agent_id not in read:  # unchanged since the last pass
                current[agent_id] = known[agent_id]
        self._agent_rows = current
        return [agent for _, agent in current.values()]

    async def _take(self, *, claim_only: bool) -> bool:
        ctx = self.context
        clients = ctx.clients
        did = False
        wanted = {a.pk: a for a in await sync_to_async(self.wanted_agents)()}
        for agent_id in [a for a in clients if a not in wanted and not claim_only]:
            await ctx.drop(agent_id, "agent disabled or stopped", flush=True)
            did = True
        allowed: dict[int, None] | None = None  # --auto: the agents to try, in order
        need = 0
        if ctx.capacity is not None:
            placement = await sync_to_async(placement_plan)(
                gateway_id=ctx.gateway_id,
                capacity=ctx.capacity,
                wanted=list(wanted),
                held=list(clients),
            )
            if not claim_only:
                await self._hand_back(placement.hand_back, draining=placement.draining)
                did = did or bool(placement.hand_back)
            allowed = dict.fromkeys(placement.take)
            need = placement.need
        shared_phones: set[str] | None = None
        for agent_id, agent in wanted.items():
            if agent_id in clients:
                clients[agent_id].agent = agent  # pick up admin edits (schedule, typing speed...)
        for agent_id, agent in wanted.items() if allowed is None else ((a, wanted[a]) for a in allowed):
            if agent_id in clients:
                continue
            if allowed is not None and need <= 0:
                break
            if shared_phones is None:  # read once per pass, and only when an agent is not held yet
                shared_phones = await sync_to_async(shared_phone_keys)()
            refusal = None
            if phone_key(agent.phone) in shared_phones:
                refusal = await sync_to_async(phone_refusal)(agent=agent, holding=set(clients))
            if refusal is not None:
                if self.refusals.get(agent_id) != refusal.holder:
                    logger.warning("refused: %s", refusal.message)
                    self.refusals[agent_id] = refusal.holder
                    await sync_to_async(record_phone_refusal)(agent_id=agent_id, message=refusal.message)
                continue
            taken_at = get_clock().monotonic()  # the lease runs from no earlier than this
            result = await sync_to_async(lease_acquire)(agent=agent, holder=ctx.gateway_id)
            if not result.acquired:
                if ctx.capacity is not None:  # --auto: another gateway took it first, as it may
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
            include_brain = ctx.workers is not None and (ctx.capacity is None or bool(result.message))
            # Held from here on (the heartbeat renews the lease), even if the step below fails.
            clients[agent_id] = AgentClient(agent, ctx.new_transport(agent), renewed_at=taken_at)
            need -= 1
            did = True
            try:
                released = await sync_to_async(nodes_take_over)(
                    agent_id=agent_id, gateway_id=ctx.gateway_id, include_brain=include_brain
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
        if ctx.capacity is None:
            self._report_standby(wanted)
        return did

    async def _hand_back(self, agent_ids: list[int], *, draining: bool) -> None:
        """Release agents for other --auto gateways to take: their received updates ingested first,
        then the other gateways woken (our own writes wake nobody)."""
        ctx = self.context
        if draining != ctx.draining:
            logger.info(
                "draining: handing back every agent"
                if draining
                else "no longer draining: taking agents again"
            )
            ctx.draining = draining
        if not agent_ids:
            return
        reason = "gateway draining" if draining else "handed to another gateway to even out the counts"
        for agent_id in agent_ids:
            await ctx.drop(agent_id, reason, flush=True)
        await sync_to_async(wake_gateways)(force=True)
        logger.info("handed back %d agent(s); holding %d", len(agent_ids), len(ctx.clients))

    def _report_standby(self, wanted: dict[int, Agent]) -> None:
        """Say once (again when the holders change) that every agent we may drive is held elsewhere.

        Such a gateway stands by: it starts no task workers (the holders' plan for those agents) and
        takes each agent over when its holder releases the lease or lets it expire.
        """
        ctx = self.context
        refused = {agent_id: self.refusals.get(agent_id) for agent_id in wanted}
        if ctx.clients or not wanted or not all(refused.values()):
            if ctx.standing_by and ctx.clients:
                logger.info(
                    "no longer standing by: holding %s",
                    ", ".join(c.agent.name for c in ctx.clients.values()),
                )
            ctx.standing_by = ""
            return
        held = ", ".join(f"{wanted[agent_id].name} by {holder}" for agent_id, holder in refused.items())
        message = (
            f"nothing to do: every agent this gateway may drive is held by another gateway ({held}); "
            "standing by without task workers, to take each over when its gateway stops or its lease "
            "expires. To run them here, stop that gateway"
        )
        if message != ctx.standing_by:
            logger.warning("%s", message)
            ctx.standing_by = message
