"""The planning watchdog: planning the gateway queued that no task worker starts.

`runworkers` replaces a pool wedged by a killed process itself (engine/cluster.py). This watchdog is
the gateway's own check, whatever runs the tasks (`runworkers`, or django-q2's plain `qcluster`,
which a killed idle worker can wedge for good). A planning node claimed more than
CINDY_PLANNING_STALL_SECONDS (45 s) ago with no LLM call started for it, while no LLM call is in
flight on any of the gateway's agents, means no worker takes tasks. Then:

- each held agent's activity shows "planning stalled", once, and "planning resumed" when an LLM call
  starts again;
- workers this gateway supervises are killed and started afresh, and its planning nodes go back to
  pending, so they are queued again for the new workers;
- with workers run elsewhere, the stalled nodes go back to pending under a new claim, so a task lost
  with a replaced pool is queued again (and the old one, should it turn up, does nothing). The gateway
  cannot restart those workers: a pool wedged for good (plain `qcluster`) stays reported until
  someone restarts it.

Planning whose LLM call was interrupted (its worker was killed: `runworkers` closes the calls of the
pool it replaces, `LLMCall.worker`) goes back to pending at the next check, in either layout, however
busy the other workers are: the killed worker will not finish it, and a task of the old claim that
still turns up does nothing, so it runs once in effect.
A call still pending whose worker is a process of this host that no longer exists (the replacement
could not close it, or `runworkers` itself was killed) is closed as interrupted at each check first:
left pending, it counted as a busy pool, which hid the stall until CINDY_Q_TIMEOUT (300 s).

Planning of the agents this gateway holds that another gateway claimed (the agent's previous holder,
killed or cut off between the claim and the enqueue, whose watchdog is gone with it) and no worker has
started (no run mark of a live worker, no LLM call but an interrupted one) for
CINDY_PLANNING_STALL_SECONDS goes back to pending as well (`planning_left_behind`): the
node's own lease would hold the turn for CINDY_NODE_LEASE_SECONDS. That is not a stall and restarts
nothing. It waits while the task queue holds tasks no worker has taken (`tasks_waiting`): behind such
a backlog their own task may still be queued, and a second one would go to the back of it, making the
chat wait the backlog twice; once the queue is empty, a task of theirs can no longer be in it.

Detection and repair take at most CINDY_PLANNING_STALL_SECONDS + CHECK_SECONDS. A busy pool (every
worker waiting on a slow model) is not a stall: its calls are in flight.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.conf import settings

from cindy_site.clock import get_clock, now
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent, NodeStatus, TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.services.activity import record_event
from conversations.services.nodes import brain_nodes_release, node_release
from engine.gateway_context import GatewayContext
from engine.health import pid_alive
from engine.task_deaths import RUN_KEY
from llm.models import LLMCall
from llm.usage import llm_calls_interrupt_gone, worker_pid_on_this_host

logger = logging.getLogger("engine.gateway")
Kind = ActivityEvent.Kind

#: How often the watchdog looks.
CHECK_SECONDS = 5.0


def planning_stalled(
    *, gateway_id: str, agent_ids: list[int], claimed_before: dt.datetime
) -> list[tuple[int, str]]:
    """(node id, claim token) of this gateway's planning nodes claimed before `claimed_before` that no
    worker has started an LLM call for, provided no LLM call of these agents is in flight (then the
    pool is busy, not stuck)."""
    # Running nodes are few; the status prefix of tasknode_lease_idx finds them.
    waiting = list(
        TaskNode.objects.filter(
            status=NodeStatus.RUNNING,
            kind__in=BRAIN_KINDS,
            lease_owner__startswith=f"{gateway_id}#",
            started__lt=claimed_before,
        ).values_list("pk", "lease_owner", "started")
    )
    if not waiting:  # the usual pass: nothing claimed long ago, no need to look at the calls
        return []
    in_flight = LLMCall.objects.filter(
        status=LLMCall.Status.PENDING,
        agent_id__in_ids=Ids(agent_ids),
        created__gte=now() - dt.timedelta(seconds=settings.Q_CLUSTER["timeout"]),
    )
    if in_flight.exists():
        return []
    return [
        (pk, owner)
        for pk, owner, started in waiting
        if not LLMCall.objects.filter(node_id=pk, created__gte=started).exists()
    ]


def planning_interrupted(*, gateway_id: str, agent_ids: list[int]) -> list[tuple[int, str]]:
    """(node id, claim token) of this gateway's running planning nodes whose latest LLM call was
    interrupted and none is in flight: the worker making it was killed."""
    held = set(agent_ids)
    # Running nodes are few: read them by status and keep the held agents' (no list of ids to send).
    running = TaskNode.objects.filter(
        status=NodeStatus.RUNNING,
        kind__in=BRAIN_KINDS,
        lease_owner__startswith=f"{gateway_id}#",
    ).values_list("pk", "lease_owner", "started", "agent_id")
    return [
        (pk, owner)
        for pk, owner, started, agent_id in running
        if agent_id in held and _latest_call_status(node_id=pk, since=started) == LLMCall.Status.INTERRUPTED
    ]


def _latest_call_status(*, node_id: int, since: dt.datetime) -> str | None:
    """The status of the node's latest LLM call made since `since` (its claim), if any."""
    return (
        LLMCall.objects.filter(node_id=node_id, created__gte=since)
        .order_by("-pk")
        .values_list("status", flat=True)
        .first()
    )


def planning_left_behind(
    *, gateway_id: str, agent_ids: list[int], claimed_before: dt.datetime, alive: Callable[[int], bool]
) -> list[tuple[int, str, int]]:
    """(node id, claim token, agent id) of running planning nodes of agents this gateway holds that
    another gateway claimed before `claimed_before` and no worker has: no task run mark of a worker
    that still runs (`engine.task_deaths`; a worker of another host counts as running), and no LLM
    call since the claim, unless the latest was interrupted (its worker was killed).

    The gateway that held the agent before (killed, or cut off and self-fenced) claimed them, and
    their task may never have reached the queue (the enqueue was cut off with it); that gateway's
    watchdog will not queue them again, and their node lease (CINDY_NODE_LEASE_SECONDS, 10 minutes)
    would hold the turn until it ran out."""
    held = set(agent_ids)
    # Running nodes are few: read them by status and keep the held agents' (no list of ids to send).
    running = TaskNode.objects.filter(
        status=NodeStatus.RUNNING, kind__in=BRAIN_KINDS, started__lt=claimed_before
    ).values_list("pk", "lease_owner", "started", "agent_id", "params")
    found = []
    for pk, owner, started, agent_id, params in running:
        if agent_id not in held or owner.startswith(f"{gateway_id}#"):
            continue
        mark = (params or {}).get(RUN_KEY)
        if mark:
            pid = worker_pid_on_this_host(str(mark.get("worker", "")))
            if pid is None or alive(pid):
                continue  # a worker has its task
        if _latest_call_status(node_id=pk, since=started) in (None, LLMCall.Status.INTERRUPTED):
            found.append((pk, owner, agent_id))
    return found


def tasks_waiting() -> int:
    """How many queued tasks no worker has taken yet (the broker's `queue_size`, public django-q2
    broker API; tasks a pool already fetched are not counted). 0 when the broker cannot be read: a
    backlog that cannot be seen holds nothing back."""
    from engine.dispatch import task_broker

    try:
        return int(task_broker().queue_size() or 0)
    except Exception:  # the broker unreachable: the watchdog's other checks go on
        logger.debug("the task queue's size could not be read", exc_info=True)
        return 0


def stalled_release(
    *, stalled: list[tuple[int, str]], reason: str = "planning not started by any task worker; queued again"
) -> int:
    """Return stalled planning nodes to pending under a new claim: the tick queues them again, and a
    task of the old claim that still turns up does nothing."""
    return sum(node_release(node_id=pk, owner=owner, reason=reason) for pk, owner in stalled)


def planning_moved(*, agent_ids: list[int], since: dt.datetime) -> bool:
    """Whether a worker started an LLM call for these agents since `since`."""
    return LLMCall.objects.filter(agent_id__in_ids=Ids(agent_ids), created__gte=since).exists()


class Watchdog:
    """The check itself, run by the workers step (`WorkersStep`) every CHECK_SECONDS."""

    def __init__(
        self,
        context: GatewayContext,
        *,
        alive: Callable[[int], bool] = pid_alive,
        waiting: Callable[[], int] = tasks_waiting,
    ) -> None:
        self.context = context
        self.alive = alive  # whether a pid of this host runs (a test gives its own)
        self.waiting = waiting  # how many queued tasks no worker has taken
        self._checked_at: float | None = None  # monotonic
        #: The agents told "planning stalled", and since when (wall clock); empty once it resumed.
        self.stalled_agents: list[int] = []
        self.stalled_at: dt.datetime | None = None
        self._restarted_at: float | None = None  # monotonic
        self._restarts = 0  # in a row, without planning moving in between

    async def run(self) -> bool:
        """Every CHECK_SECONDS: report planning that no worker starts, and restart our own workers."""
        ctx = self.context
        clock = get_clock()
        if self._checked_at is not None and clock.monotonic() - self._checked_at < CHECK_SECONDS:
            return False
        if ctx.upkeep_waits(last=self._checked_at, period=CHECK_SECONDS):
            return False
        self._checked_at = clock.monotonic()
        held = list(ctx.clients)
        limit = settings.CINDY_PLANNING_STALL_SECONDS
        restarted = self._restarted_at
        # Workers we restarted get the stall limit to come up, doubled at each restart in a row, so
        # a machine too slow to start them within the limit does not restart them forever.
        grace = limit * 2 ** max(self._restarts - 1, 0)
        if not held or (restarted is not None and clock.monotonic() - restarted < grace):
            return False
        # A call its dead worker left pending would pass for a busy pool until CINDY_Q_TIMEOUT.
        await sync_to_async(llm_calls_interrupt_gone)(alive=self.alive)
        interrupted = await sync_to_async(planning_interrupted)(gateway_id=ctx.gateway_id, agent_ids=held)
        if interrupted:
            await sync_to_async(stalled_release)(stalled=interrupted)
            await self._announce(
                held,
                Kind.INFO,
                f"planning queued again: the task worker of {len(interrupted)} planning task(s) was killed",
            )
            return True
        claimed_before = now() - dt.timedelta(seconds=limit)
        left = await sync_to_async(planning_left_behind)(
            gateway_id=ctx.gateway_id, agent_ids=held, claimed_before=claimed_before, alive=self.alive
        )
        if left and await sync_to_async(self.waiting)():
            left = []  # their task may wait in that backlog: queued again, it would wait it twice
        if left:
            await sync_to_async(stalled_release)(
                stalled=[(pk, owner) for pk, owner, _agent in left],
                reason="planning claimed by the agent's previous gateway had not started; queued again",
            )
            await self._announce(
                sorted({agent for _pk, _owner, agent in left}),
                Kind.INFO,
                "planning queued again: the gateway that held this agent before claimed it and its "
                f"task had not started in {limit} s",
            )
        stalled = await sync_to_async(planning_stalled)(
            gateway_id=ctx.gateway_id, agent_ids=held, claimed_before=claimed_before
        )
        if not stalled:
            if self.stalled_agents and await sync_to_async(planning_moved)(
                agent_ids=self.stalled_agents, since=self.stalled_at
            ):
                await self._announce(self.stalled_agents, Kind.INFO, "planning resumed")
                self.stalled_agents, self._restarts = [], 0
            return False
        workers = ctx.workers
        if workers is None:
            # Workers run elsewhere: say so, and queue the planning again in case its task was lost
            # with a pool that was replaced (`runworkers`).
            await sync_to_async(stalled_release)(stalled=stalled)
            if not self.stalled_agents:
                self.stalled_agents, self.stalled_at = held, now()
                await self._announce(
                    held,
                    Kind.AGENT_ERROR,
                    f"planning stalled: {len(stalled)} planning task(s) queued over {limit} s "
                    "ago have not started; the task workers may be wedged: restart them "
                    "(`manage.py runworkers` replaces a wedged pool by itself)",
                )
            return True
        self.stalled_agents, self.stalled_at = held, now()
        logger.error("planning stalled (nodes %s): restarting the task workers", [pk for pk, _ in stalled])
        await self._announce(
            held,
            Kind.AGENT_ERROR,
            f"planning stalled: {len(stalled)} planning task(s) queued over {limit} s ago "
            "have not started; restarting the task workers",
        )
        await asyncio.to_thread(workers.stop)
        await sync_to_async(brain_nodes_release)(
            gateway_id=ctx.gateway_id, reason="task workers restarted after a stall"
        )
        workers.start()  # on the loop's (main) thread: see `WorkersStep.run`
        self._restarted_at = clock.monotonic()
        self._restarts += 1
        return True

    @staticmethod
    async def _announce(agent_ids: list[int], kind: str, summary: str) -> None:
        for agent_id in agent_ids:
            await sync_to_async(record_event)(kind, agent_id=agent_id, summary=summary)


class WorkersStep:
    """Checks that planning moves (`Watchdog`), then (re)starts the task workers this gateway runs."""

    name = "workers"

    def __init__(self, context: GatewayContext, watchdog: Watchdog) -> None:
        self.context = context
        self.watchdog = watchdog
        self._started = False

    async def run(self) -> bool:
        did = await self.watchdog.run()
        workers = self.context.workers
        if workers is None:
            return did
        if self.context.standing_by and not self._started:
            return did  # standing by: the gateways holding our agents plan for them
        self._started = True
        # On the loop's (main) thread, never a pool thread: the child's parent-death signal
        # (PR_SET_PDEATHSIG) fires when the thread that started it ends, which must be the gateway's.
        return workers.step() or did
