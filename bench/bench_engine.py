"""Engine benchmarks. Prints figures; asserts nothing.

- inbound → LLM request: from a sandbox message to the request reaching the (local, fake) LLM server,
  through ingest, replan, tick, history sync and planning, with 500 messages of history;
- tick claim throughput with 100, 1,000 and 10,000 pending nodes (10,000 in 1,000 and in 10,000
  conversations), beside the previous read and claim, on SQLite and on MariaDB when reachable
  (DATABASE_URL=mysql://... or the local server at 127.0.0.1:3306; a dedicated database, named by
  CINDY_BENCH_DATABASE_NAME or cindy_bench_<pid>, is created and dropped);
- the gateway's CPU per idle pass with 100 sandbox agents, and its share of a core at the tick;
- claims per second end to end in a running gateway: 1,000 chats of 100 sandbox agents with a message
  waiting, driven through gateway passes until every planning node is claimed, synced, marked read
  and queued;
- the gateway's resident memory (RSS) with 100 sandbox agents, lean (the default) and with
  CINDY_LEAN_ENGINE=false;
- one task worker's RSS after its first plan, in a real `runagents` with its `runworkers` pool and
  the fake LLM server as Gemini, and that first plan's latency with and without the LLM stack
  preloaded (docs/performance.md, "Memory");
- `sandbox say` → reply stored, through a real `runagents` process and its task workers, with 1 and
  with 100 sandbox agents, less the read delay (set to 0) and the typing time the reply's send node
  applied (its recorded start-typing delay: none for an agent already online in the chat), the mean of
  the waits beside the goal, with wake-ups beside the fixed tick and 0.2 s broker poll they replace;
  and the gateway's idle CPU in each, time-averaged over consecutive windows, the worst window beside.

Run: .venv/bin/python bench/bench_engine.py  (one or some parts: --only claims,idle; parts: overhead,
claims, idle, dispatch, rss, worker_rss, latency)
Each part runs in its own process on its own temporary database and touches nothing else.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from figures import Declared, Goal, Statistic, Windows, samples
from processes import stop_process

ROOT = Path(__file__).resolve().parent.parent
HISTORY = 500
OVERHEAD_RUNS = 20
CONVERSATIONS = 1000
GATEWAY_AGENTS = 100
CLAIM_RUNS = 5
IDLE_RUNS = 9
#: Idle passes in process: their CPU over the span the passes and the tick's waits between them make.
PASS_IDLE = Declared(
    "gateway CPU per idle pass",
    Statistic.TIME_AVERAGE,
    "% of a core",
    Goal(0.02, "≤ 2% of a core, time-averaged", Statistic.TIME_AVERAGE),
)
DISPATCH_RUNS = 5
DISPATCH_GOAL = 500
LATENCY_RUNS = 7
#: Each wait: from the message to the reply as both are stored, less the typing its send node applied.
LATENCY = Declared(
    "sandbox say → reply stored", Statistic.MEAN, "ms", Goal(300, "≤ 300 ms, mean", Statistic.MEAN)
)
LATENCY_WORST = Declared("the longest wait", Statistic.WORST, "ms")
#: The gateway's CPU seconds over the idle span / its wall seconds.
GATEWAY_IDLE = Declared(
    "gateway process CPU while idle",
    Statistic.TIME_AVERAGE,
    "% of a core",
    Goal(0.02, "≤ 2% of a core, time-averaged", Statistic.TIME_AVERAGE),
)
IDLE_WORST = Declared("gateway process CPU while idle, worst window", Statistic.WORST, "% of a core")
LATENCY_AGENTS = (1, 100)
LATENCY_REPLY = "hi!"
IDLE_CPU_SAMPLES = 5
IDLE_CPU_SECONDS = 2.0
#: The gateway and broker settings before wake-ups: a fixed 1 s tick, the ORM broker polled every 0.2 s.
POLLING = {"CINDY_WAKE": "false", "CINDY_Q_POLL_SECONDS": "0.2"}
#: Tick claims: (pending nodes, conversations they wait in) and the claims timed per run.
CLAIM_BACKLOGS = ((100, 100), (1_000, 1_000), (10_000, 1_000), (10_000, 10_000))
CLAIMS_PER_RUN = 1_000
CLAIM_GOALS = {"SQLite": 5000, "MariaDB": 4000}


def setup_django(env: dict[str, str]) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "cindy_site.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _vm_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def make_agent(name: str):
    from agents.models import Agent

    return Agent.objects.create(
        name=name, phone="+15550000000", instructions=f"You are {name}.", transport="sandbox", llm="gemini"
    )


# --- part 1: inbound → LLM request ------------------------------------------------------------------


def part_overhead() -> None:
    from asgiref.sync import async_to_sync
    from django.conf import settings

    from cindy_site.testing.fake_llm import FakeLLMServer
    from conversations.models import Conversation, Message
    from engine.gateway import Gateway
    from engine.tasks import run_received
    from sandbox.services.chats import sandbox_say

    server = FakeLLMServer().start()
    settings.GEMINI_BASE_URL, settings.GOOGLE_GEMINI_API_KEY = server.url, "bench"
    settings.CINDY_READ_DELAY_SECONDS = 0  # the overhead, not the deliberate read delay
    server.set_default_reply("[]")
    arrivals: list[float] = []

    class TimedRequests(list):
        def append(self, item) -> None:
            arrivals.append(time.perf_counter())
            super().append(item)

    server.requests = TimedRequests()
    agent = make_agent("Bench")
    queued: list[tuple[int, str]] = []
    gateway = Gateway(
        gateway_id="bench", enqueue=lambda node_id, owner: queued.append((node_id, owner)), tick_seconds=0
    )
    async_to_sync(gateway.steps["leases"].run)()
    async_to_sync(gateway.steps["connect"].run)()

    # 500 messages of history, in the sandbox and already in the mirror.
    for i in range(HISTORY):
        sandbox_say(agent=agent, text=f"history message {i} " + "lorem ipsum " * 5)
    async_to_sync(gateway.steps["ingest"].run)()
    conversation = Conversation.objects.get(agent=agent)
    assert Message.objects.filter(conversation=conversation).count() == HISTORY

    samples = []
    for i in range(OVERHEAD_RUNS):
        start = time.perf_counter()
        sandbox_say(agent=agent, text=f"new message {i}")
        async_to_sync(gateway.steps["ingest"].run)()
        async_to_sync(gateway.steps["tick"].run)()
        while queued:
            run_received(*queued.pop(0))
        samples.append(arrivals[-1] - start)
    server.stop()
    samples.sort()
    print(
        f"inbound → LLM request, {HISTORY} messages of history: median {statistics.median(samples) * 1000:.1f} ms, "
        f"p90 {samples[int(len(samples) * 0.9) - 1] * 1000:.1f} ms, max {samples[-1] * 1000:.1f} ms "
        f"({OVERHEAD_RUNS} runs)"
    )


# --- part 2: tick claim throughput ---------------------------------------------------------------------


def _conversation_heads_before(
    *, agent_ids: list[int], at, limit: int, after: int = 0, upto: int | None = None
) -> list[tuple[int, int]]:
    """The previous heads read: (conversation id, node id), written with the ORM, the head subquery
    in the select list and again in the filter."""
    from django.db.models import Exists, OuterRef, Subquery

    from conversations.models import Conversation, NodeStatus, TaskGraph, TaskNode

    unfinished_dependency = TaskNode.depends_on.through.objects.filter(from_tasknode=OuterRef("pk")).exclude(
        to_tasknode__status=NodeStatus.DONE
    )
    head = (
        TaskNode.objects.filter(
            conversation=OuterRef("active_slot"), status=NodeStatus.PENDING, not_before__lte=at
        )
        .filter(~Exists(unfinished_dependency))
        .order_by("not_before", "id")
        .values("id")[:1]
    )
    running = TaskNode.objects.filter(conversation=OuterRef("active_slot"), status=NodeStatus.RUNNING)
    acting_agent = Conversation.objects.filter(
        pk=OuterRef("active_slot"),
        gagged=False,
        agent__disabled=False,
        agent__gagged=False,
        agent__stopped=False,
    ).values("agent_id")[:1]
    graphs = TaskGraph.objects.filter(active_slot__gt=after)
    if upto is not None:
        graphs = graphs.filter(active_slot__lte=upto)
    return list(
        graphs.alias(acting_agent=Subquery(acting_agent))
        .filter(acting_agent__in=agent_ids)
        .filter(~Exists(running))
        .annotate(head=Subquery(head))
        .filter(head__isnull=False)
        .order_by("active_slot")
        .values_list("active_slot", "head")[:limit]
    )


def _candidates_before(ticker, *, agent_ids: list[int], at) -> list:
    """The previous candidate read: the heads (above), then their values by id in a second query."""
    from conversations.models import TaskNode
    from conversations.selectors import Candidate
    from engine.tick import SCAN_LIMIT

    heads = _conversation_heads_before(agent_ids=agent_ids, at=at, limit=SCAN_LIMIT, after=ticker._after)
    if len(heads) < SCAN_LIMIT and ticker._after:
        heads += _conversation_heads_before(
            agent_ids=agent_ids, at=at, limit=SCAN_LIMIT - len(heads), upto=ticker._after
        )
    ticker._after = heads[-1][0] if len(heads) == SCAN_LIMIT else 0
    rows = (
        TaskNode.objects.filter(pk__in=[node_id for _, node_id in heads])
        .order_by("not_before", "id")
        .values_list("id", "agent_id", "conversation_id", "kind")
    )
    taken: dict[int, int] = {}
    in_turns = []
    for position, row in enumerate(rows):
        turn = taken.get(row[1], 0)
        taken[row[1]] = turn + 1
        in_turns.append((turn, position, Candidate(*row)))
    in_turns.sort(key=lambda entry: entry[:2])
    return [candidate for _, _, candidate in in_turns[:SCAN_LIMIT]]


def _nodes_claim_before(*, node_ids: list[int], owner: str) -> int:
    """The previous batch claim: the status compared as a plain column beside the ids (so SQLite
    walked the status index), the won rows read in the model's order."""
    import datetime as dt

    from django.conf import settings
    from django.db import transaction

    from agents.models import Agent
    from cindy_site.clock import now
    from conversations.models import ActivityEvent, NodeStatus, TaskNode
    from conversations.services.activity import events_insert

    when = now()
    lease = dt.timedelta(seconds=settings.CINDY_NODE_LEASE_SECONDS)
    with transaction.atomic():
        changed = TaskNode.objects.filter(pk__in=node_ids, status=NodeStatus.PENDING).update(
            status=NodeStatus.RUNNING, lease_owner=owner, lease_expires_at=when + lease, started=when
        )
        if not changed:
            return 0
        won = {
            node.pk: node
            for node in TaskNode.objects.select_related("conversation").filter(
                pk__in=node_ids, status=NodeStatus.RUNNING, lease_owner=owner
            )
        }
        agents = Agent.objects.in_bulk({node.agent_id for node in won.values()})
        for node in won.values():
            node.agent = agents[node.agent_id]
        events_insert(
            ActivityEvent.Kind.NODE_CLAIMED,
            [
                (
                    node.agent_id,
                    node.conversation_id,
                    node.pk,
                    f"{node.kind} #{node.pk}: claimed by bench",
                    {"kind": node.kind, "graph_id": node.graph_id, "attempt": node.attempts + 1},
                )
                for node in won.values()
            ],
            when=when,
        )
    return len([won[pk] for pk in node_ids if pk in won])


def _claim_before(ticker, agent_ids: list[int]) -> int:
    """The previous claim pass: the same due check and selection, on the previous read and claim."""
    from cindy_site.clock import now
    from conversations.selectors import pending_nodes_due
    from conversations.services.nodes import new_claim_token

    at = now()
    if not pending_nodes_due(agent_ids=agent_ids, at=at):
        return 0
    chosen = ticker.select(_candidates_before(ticker, agent_ids=agent_ids, at=at))
    if not chosen:
        return 0
    return _nodes_claim_before(node_ids=[n.id for n in chosen], owner=new_claim_token(ticker.gateway_id))


def _claims_per_second(claim, wanted: int) -> float:
    """Claim passes from a reset backlog until `wanted` nodes are claimed (or nothing more can be)."""
    from conversations.models import ActivityEvent, NodeStatus, TaskNode

    TaskNode.objects.filter(status=NodeStatus.RUNNING).update(
        status=NodeStatus.PENDING, lease_owner="", lease_expires_at=None, started=None
    )
    ActivityEvent.objects.all().delete()
    claimed = 0
    start = time.perf_counter()
    while claimed < wanted:
        got = claim()
        if not got:
            break
        claimed += got
    return claimed / (time.perf_counter() - start)


def _claims_backlog(agents: list, pending: int, count: int) -> None:
    """`pending` nodes queued in `count` conversations of `agents`, each conversation's nodes a chain
    (each waits for the one before, as a plan's tasks do)."""
    from cindy_site.clock import now
    from conversations.models import Conversation, NodeKind, TaskGraph, TaskNode

    TaskNode.objects.all().delete()
    TaskGraph.objects.all().delete()
    Conversation.objects.all().delete()
    when = now()
    conversations = Conversation.objects.bulk_create(
        Conversation(agent=agents[i % len(agents)], peer_id=10_000 + i, kind="dm") for i in range(count)
    )
    graphs = TaskGraph.objects.bulk_create(
        TaskGraph(conversation=c, active_slot=c.pk, trigger="message", created=when) for c in conversations
    )
    per = pending // count
    nodes = TaskNode.objects.bulk_create(
        TaskNode(
            graph=g,
            conversation=c,
            agent_id=c.agent_id,
            kind=NodeKind.RECEIVED,
            sequence=i,
            not_before=when,
            created=when,
        )
        for g, c in zip(graphs, conversations, strict=True)
        for i in range(per)
    )
    through = TaskNode.depends_on.through
    through.objects.bulk_create(
        through(from_tasknode_id=nodes[k].pk, to_tasknode_id=nodes[k - 1].pk)
        for k in range(len(nodes))
        if k % per
    )


def part_claims(label: str) -> None:
    """Tick claims per second with a backlog of 100, 1,000 and 10,000 pending nodes (CLAIM_BACKLOGS):
    claim passes (`Ticker.claim`, up to 200 nodes each) until CLAIMS_PER_RUN nodes, or every
    conversation's next node, are claimed; beside the previous candidate read, same backlog, same run."""
    from engine.tick import Ticker

    agents = [make_agent(f"Bench{i}") for i in range(10)]
    agent_ids = [a.pk for a in agents]
    held = {a.pk: a for a in agents}
    goal = CLAIM_GOALS[label]
    for pending, conversations in CLAIM_BACKLOGS:
        _claims_backlog(agents, pending, conversations)
        wanted = min(CLAIMS_PER_RUN, conversations)
        old, new = [], []
        for _ in range(CLAIM_RUNS):  # interleaved, so both paths see the same machine load
            ticker = Ticker(gateway_id="bench")
            old.append(_claims_per_second(lambda t=ticker: _claim_before(t, agent_ids), wanted))
            ticker = Ticker(gateway_id="bench")
            # As the gateway claims: with the agent rows it holds (`TickStep.claim`).
            new.append(
                _claims_per_second(lambda t=ticker: len(t.claim(agent_ids=agent_ids, agents=held)), wanted)
            )
        rate, before = statistics.median(new), statistics.median(old)
        print(
            f"tick claims, {pending:,} pending in {conversations:,} conversations on {label}: median "
            f"{rate:,.0f} claims/s (before, two queries per read and the status index in the claim: "
            f"{before:,.0f}/s, {rate / before:.1f}x); goal ≥ {goal:,}/s, "
            f"{'meets' if rate >= goal else 'MISSES'} ({CLAIM_RUNS} runs of {wanted:,} claims)",
            flush=True,
        )


def _idle_pass_cpu(gateway) -> float:
    from asgiref.sync import async_to_sync

    started = time.process_time()
    async_to_sync(gateway.run_once)()
    return time.process_time() - started


def part_idle() -> None:
    """CPU of one gateway pass with nothing to do, 100 sandbox agents connected (in process)."""
    from asgiref.sync import async_to_sync
    from django.conf import settings

    from engine.gateway import Gateway

    for i in range(GATEWAY_AGENTS):
        make_agent(f"Idle{i:03d}")
    # One gateway id, so both hold the leases; each has its own connections.
    gateway = Gateway(gateway_id="bench-idle", enqueue=lambda node_id, owner: None, tick_seconds=0)
    previous = _previous_gateway()(
        gateway_id="bench-idle", enqueue=lambda node_id, owner: None, tick_seconds=0
    )
    for _ in range(3):  # take the leases, connect, first media scan
        async_to_sync(gateway.run_once)()
        async_to_sync(previous.run_once)()
    samples, before = [], []
    for _ in range(IDLE_RUNS):  # interleaved, so both see the same machine load
        before.append(_idle_pass_cpu(previous))
        samples.append(_idle_pass_cpu(gateway))
    tick = settings.CINDY_TICK_SECONDS
    print(
        f"gateway CPU while idle, {GATEWAY_AGENTS} agents, with a {tick:g} s tick: "
        f"{PASS_IDLE.figure(pass_share(samples, tick)).line()} (before: "
        f"{PASS_IDLE.figure(pass_share(before, tick), goal=False).text}); mean "
        f"{statistics.fmean(samples) * 1000:.0f} ms per pass (before {statistics.fmean(before) * 1000:.0f} ms), "
        f"costliest {max(samples) * 1000:.0f} ms ({IDLE_RUNS} runs)"
    )


def pass_share(passes: list[float], tick: float) -> float:
    """The share of a core of idle passes each followed by a tick's wait: every pass's CPU over the
    span they and their waits make."""
    return sum(passes) / (sum(passes) + tick * len(passes))


# --- part 3: end-to-end claims in a running gateway ------------------------------------------------------


def _previous_gateway():
    """The gateway as it was, for before/after figures: it builds every agent's model at every pass,
    reconnects to the database after every pass, asks the schedule one agent at a time, and
    dispatches each claimed `received` node on its own (history sync, mark-read, enqueue), one after
    another."""
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import close_old_connections, transaction

    from agents.models import Agent
    from cindy_site.clock import now
    from conversations.models import Conversation
    from conversations.models.graph import BRAIN_KINDS
    from conversations.selectors import conversation_last_message_id
    from conversations.services.nodes import node_release, nodes_reap_expired
    from engine.gateway import Gateway
    from engine.ingest import RECONCILE_LIMIT, ingest_history
    from engine.responsiveness import asleep_until

    async def sync_recent(*, agent_id: int, transport, conversation) -> None:
        last_id = await sync_to_async(conversation_last_message_id)(conversation=conversation)
        records = await transport.history(conversation.peer_id, since_id=last_id, limit=RECONCILE_LIMIT)
        if records:
            await sync_to_async(ingest_history)(agent_id=agent_id, records=records, trigger=False)

    def conversation_mark_read(*, conversation, message_id: int) -> None:
        Conversation.objects.filter(pk=conversation.pk).update(last_read_message_id=message_id)

    class PreviousGateway(Gateway):
        def __init__(self, **kwargs) -> None:
            super().__init__(**kwargs)
            self.leases.wanted_agents = self._wanted_agents
            self.steps["tick"].run = self._tick

        def _wanted_agents(self) -> list:
            qs = Agent.objects.filter(disabled=False, stopped=False)
            if self.context.names:
                qs = qs.filter(name__in=self.context.names)
            return list(qs)

        def _close_old_connections(self) -> None:
            close_old_connections()

        def _previous_active_agent_ids(self) -> list[int]:
            when = now()
            return [
                agent_id
                for agent_id, client in self.clients.items()
                if client.connected
                and (client.paused_until is None or client.paused_until <= when)
                and asleep_until(agent=client.agent, at=when) is None
            ]

        async def _tick(self) -> bool:
            tick = self.steps["tick"]
            held = list(self.clients)
            reaped = await sync_to_async(nodes_reap_expired)(agent_ids=held) if held else 0
            active = await sync_to_async(self._previous_active_agent_ids)()
            claimed = await sync_to_async(tick.ticker.claim)(agent_ids=active)
            actions = []
            for node, owner in claimed:
                if node.kind in BRAIN_KINDS:
                    await self._dispatch_one(node, owner)
                else:
                    actions.append(tick._run_action(node, owner))
            if actions:
                await asyncio.gather(*actions)
            return bool(reaped or claimed)

        async def _dispatch_one(self, node, owner: str) -> None:
            client = self.clients.get(node.agent_id)
            if client is None:
                await sync_to_async(node_release)(node_id=node.pk, owner=owner, reason="agent no longer held")
                return
            try:
                await sync_recent(
                    agent_id=node.agent_id, transport=client.transport, conversation=node.conversation
                )
                last = await sync_to_async(conversation_last_message_id)(conversation=node.conversation)
                if last:
                    await client.transport.mark_read(node.conversation.peer_id, last)
                    await sync_to_async(conversation_mark_read)(
                        conversation=node.conversation, message_id=last
                    )
            except Exception:
                pass
            await sync_to_async(self._enqueue_one)(node.pk, owner)

        def _enqueue_one(self, node_id: int, owner: str) -> None:
            with transaction.atomic():
                transaction.on_commit(lambda: self.context.enqueue(node_id, owner))

    return PreviousGateway


def _dispatch_per_second(gateway, queued: list, total: int) -> float:
    """Return every planning node to pending, then run gateway passes until all are queued."""
    from asgiref.sync import async_to_sync

    from conversations.models import ActivityEvent, Conversation, NodeStatus, TaskNode
    from sandbox.models import SandboxMember

    TaskNode.objects.update(status=NodeStatus.PENDING, lease_owner="", lease_expires_at=None, started=None)
    ActivityEvent.objects.all().delete()
    # Unread again, so each run marks every chat read as the first one did.
    Conversation.objects.update(last_read_message_id=None)
    SandboxMember.objects.filter(user__agent__isnull=False).update(read_up_to=0)
    queued.clear()
    start = time.perf_counter()
    for _ in range(total):  # a pass claims at most MAX_NODES_PER_TICK; a pass that queues nothing stops it
        before = len(queued)
        async_to_sync(gateway.run_once)()
        if len(queued) >= total or len(queued) == before:
            break
    elapsed = time.perf_counter() - start
    return len(queued) / elapsed


def part_dispatch() -> None:
    """Claims per second end to end: 1,000 chats of 100 sandbox agents, each with a message waiting
    to be planned, driven through `Gateway.run_once` until every planning node is claimed, its chat
    synced and marked read, and its planning queued (recorded in process)."""
    from asgiref.sync import async_to_sync
    from django.conf import settings

    from conversations.models import TaskNode
    from engine.gateway import Gateway
    from sandbox.services.chats import sandbox_say

    settings.CINDY_READ_DELAY_SECONDS = 0
    agents = [make_agent(f"Chat{i:03d}") for i in range(GATEWAY_AGENTS)]
    queued: list[tuple[int, str]] = []
    record = lambda node_id, owner: queued.append((node_id, owner))  # noqa: E731
    # One gateway id, so both hold the leases; each has its own connections.
    new = Gateway(gateway_id="bench", enqueue=record, tick_seconds=0)
    old = _previous_gateway()(gateway_id="bench", enqueue=record, tick_seconds=0)
    for gateway in (new, old):
        async_to_sync(gateway.steps["leases"].run)()
        async_to_sync(gateway.steps["connect"].run)()
    people = CONVERSATIONS // GATEWAY_AGENTS
    for agent in agents:
        for j in range(people):
            sandbox_say(agent=agent, text=f"hello from person {j}", as_name=f"Person {j}")
    async_to_sync(new.steps["ingest"].run)()  # one received node per chat
    total = TaskNode.objects.filter(kind="received").count()
    assert total == CONVERSATIONS, total
    before, after = [], []
    for _ in range(DISPATCH_RUNS):  # interleaved, so both paths see the same machine load
        before.append(_dispatch_per_second(old, queued, total))
        after.append(_dispatch_per_second(new, queued, total))
    rate, was = statistics.median(after), statistics.median(before)
    print(
        f"claims end to end in a running gateway, {total} chats of {GATEWAY_AGENTS} sandbox agents: median "
        f"{rate:.0f} claims/s (one node at a time: {was:.0f}/s, {rate / was:.1f}x); goal ≥ {DISPATCH_GOAL}/s, "
        f"{'meets' if rate >= DISPATCH_GOAL else 'MISSES'} ({DISPATCH_RUNS} runs)"
    )


# --- part 4: gateway RSS --------------------------------------------------------------------------------

GATEWAY_RSS_RUNS = 5
GATEWAY_GOAL_MIB = 90


def _gateway_rss_once(env: dict[str, str], lean: bool) -> float:
    """Start `runagents --no-workers`, wait until it holds every agent and has had a moment to connect
    and reconcile them, and read its RSS (MiB); it then stops and releases the agents."""
    from agents.models import AgentLease

    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runagents", "--no-workers"],
        env={
            **os.environ,
            **env,
            "LOG_LEVEL": "WARNING",
            "CINDY_GATEWAY_NAME": "bench",
            "CINDY_LEAN_ENGINE": "true" if lean else "false",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        held = AgentLease.objects.filter(holder__startswith=f"bench:{process.pid}:")
        deadline = time.monotonic() + 120
        while held.count() < GATEWAY_AGENTS:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the gateway holds {held.count()} of {GATEWAY_AGENTS} agents")
            time.sleep(0.1)
        time.sleep(1)  # let every client connect and reconcile before reading memory
        return _vm_rss_kib(process.pid) / 1024
    finally:
        process.terminate()
        process.wait(timeout=30)


def part_rss(env: dict[str, str]) -> None:
    for i in range(GATEWAY_AGENTS):
        make_agent(f"Agent{i:03d}")
    lean, full = [], []
    for _ in range(GATEWAY_RSS_RUNS):
        lean.append(_gateway_rss_once(env, lean=True))
        full.append(_gateway_rss_once(env, lean=False))
    now, before = statistics.median(lean), statistics.median(full)
    print(
        f"gateway RSS with {GATEWAY_AGENTS} sandbox agents: median {now:.0f} MiB, {now * 1024 / GATEWAY_AGENTS:.0f} "
        f"KiB per agent (with CINDY_LEAN_ENGINE=false: {before:.0f} MiB); goal ≤ {GATEWAY_GOAL_MIB} MiB, "
        f"{'meets' if now <= GATEWAY_GOAL_MIB else 'MISSES'} ({GATEWAY_RSS_RUNS} runs)"
    )


# --- part 4: one task worker's RSS after its first plan ------------------------------------------------

WORKER_RUNS = 5
WORKER_GOAL_MIB = 90
#: Each run of the worker part measures these, in turn, so all see the same machine load.
WORKER_CONFIGS = {
    "now": {},
    "no preload": {"CINDY_PRELOAD_TASK_MODULES": "false"},
    "before": {"CINDY_LEAN_ENGINE": "false", "CINDY_PRELOAD_TASK_MODULES": "false"},
}
_READY = re.compile(r"(Process-[0-9a-f]+) ready for work at (\d+)")
_PROCESSING = re.compile(r"(Process-[0-9a-f]+) processing \S+ 'engine\.tasks\.run_received'")


def _wait_log(log: Path, found, what: str, seconds: float = 90):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = log.read_text()
        if found(text):
            return text
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {what}; log:\n{log.read_text()[-3000:]}")


def _worker_rss_once(env: dict[str, str], agent, arrivals: list[float], log: Path) -> tuple[float, float]:
    """Start `runagents` with its task workers, send one sandbox message once the agent is held and a
    worker is ready, and read the RSS of the worker that planned the reply once its task is done.
    Returns (RSS in MiB, seconds from the message to the LLM request)."""
    from sandbox.services.chats import sandbox_say

    log.write_text("")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runagents"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the gateway, its worker pool and the pool's children in one group
    )
    try:
        _wait_log(
            log,
            lambda t: "task workers running" in t and f"holding agent {agent.name}" in t,
            "the task workers",
        )
        seen = len(arrivals)
        sent = time.perf_counter()
        sandbox_say(agent=agent, text="hello")
        text = _wait_log(log, lambda t: "Processed 'engine.tasks.run_received'" in t, "the plan")
        if len(arrivals) == seen:
            raise RuntimeError(f"the plan did not reach the LLM server; log:\n{text[-3000:]}")
        pids = dict(_READY.findall(text))
        worker = int(pids[_PROCESSING.search(text).group(1)])
        return _vm_rss_kib(worker) / 1024, arrivals[seen] - sent
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def part_worker_rss(env: dict[str, str]) -> None:
    """One task worker of a real `runagents` (gateway + `runworkers` pool, django-q2 forked workers),
    the fake LLM server as Gemini: its VmRSS after the first plan, and that plan's latency."""
    from cindy_site.testing.fake_llm import FakeLLMServer

    server = FakeLLMServer().start()
    server.set_default_reply("[]")
    arrivals: list[float] = []

    class TimedRequests(list):
        def append(self, item) -> None:
            arrivals.append(time.perf_counter())
            super().append(item)

    server.requests = TimedRequests()
    agent = make_agent("Wendy")
    child = {
        **os.environ,
        **env,
        "GEMINI_BASE_URL": server.url,
        "GOOGLE_GEMINI_API_KEY": "bench",
        "DEFAULT_AGENT_LLM": "gemini",
        "CINDY_TICK_SECONDS": "0.05",
        "CINDY_READ_DELAY_SECONDS": "0",
        "LOG_LEVEL": "INFO",
    }
    rss: dict[str, list[float]] = {name: [] for name in WORKER_CONFIGS}
    latency: dict[str, list[float]] = {name: [] for name in WORKER_CONFIGS}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "runagents.log"
        for _ in range(WORKER_RUNS):
            for name, extra in WORKER_CONFIGS.items():
                mib, seconds = _worker_rss_once({**child, **extra}, agent, arrivals, log)
                rss[name].append(mib)
                latency[name].append(seconds)
    server.stop()
    now, before = statistics.median(rss["now"]), statistics.median(rss["before"])
    print(
        f"task worker RSS after its first plan (runagents + runworkers, fake Gemini): median {now:.0f} MiB "
        f"(before: {before:.0f} MiB with CINDY_LEAN_ENGINE=false and no preload; without preload "
        f"{statistics.median(rss['no preload']):.0f} MiB); goal ≤ {WORKER_GOAL_MIB} MiB, "
        f"{'meets' if now <= WORKER_GOAL_MIB else 'MISSES'} ({WORKER_RUNS} runs)"
    )
    warm, cold = statistics.median(latency["now"]), statistics.median(latency["no preload"])
    print(
        f"first plan of a fresh worker pool, message → LLM request: median {warm * 1000:.0f} ms with the LLM "
        f"stack preloaded, {cold * 1000:.0f} ms without ({cold / warm:.1f}x) ({WORKER_RUNS} runs)"
    )


# --- part 5: sandbox say → reply stored, real processes -------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _wait(predicate, what: str, log: Path, seconds: float = 180):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise RuntimeError(f"timed out waiting for {what}; gateway log:\n{log.read_text()[-3000:]}")


def user_wait_seconds(*, said_at, replied_at, typing_applied: float) -> float:
    """What a person waits for beyond the typing they see: from their message to the agent's reply as
    both are stored, less the typing the send node actually applied (`typing_applied`)."""
    return (replied_at - said_at).total_seconds() - typing_applied


def typing_applied(agent, node_params: dict, text: str) -> float:
    """The typing time a send node applied: the start-typing delay it recorded (`start_delay`: 0 for
    an agent already online in the chat) and the text at the agent's typing speed."""
    from engine.handlers.send import typing_seconds

    if "start_delay" not in node_params:
        raise RuntimeError(f"send node params {node_params!r}: no start_delay recorded; was the text typed?")
    return float(node_params["start_delay"]) + typing_seconds(agent, text, online=True)


def reply_typing(agent, reply) -> float:
    """The typing time applied to `reply` (a SandboxMessage of the agent), read from the send node
    that sent it (the message carries the node's random_id)."""
    from conversations.models import TaskNode

    params = list(
        TaskNode.objects.filter(agent=agent, kind="send", random_id=reply.random_id).values_list(
            "params", flat=True
        )
    )
    if len(params) != 1:
        raise RuntimeError(
            f"{agent.name}'s message #{reply.message_id} (random_id {reply.random_id}): {len(params)} send "
            "nodes carry its random_id, expected 1; was it sent by the send task?"
        )
    return typing_applied(agent, params[0], reply.text)


def _say_and_wait(agent, text: str, log: Path) -> float:
    """Seconds from the person's message to the agent's reply as both are stored, less the typing time
    the reply's send node applied (read from the node, as the gateway recorded it)."""
    from sandbox.models import SandboxMessage
    from sandbox.services.chats import sandbox_say

    said = sandbox_say(agent=agent, text=text)
    reply = _wait(
        lambda: SandboxMessage.objects.filter(
            chat_id=said.chat_id, sender__agent=agent, message_id__gt=said.message_id
        ).first(),
        f"{agent.name}'s reply",
        log,
    )
    return user_wait_seconds(
        said_at=said.date, replied_at=reply.date, typing_applied=reply_typing(agent, reply)
    )


def _gateway_run(agents, env: dict[str, str], log: Path) -> tuple[list[float], Windows]:
    """Start runagents (with its workers), measure LATENCY_RUNS replies, then its idle CPU share."""
    from agents.models import AgentLease

    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runagents"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait(lambda: AgentLease.objects.count() >= len(agents), "every lease", log)
        chosen = [agents[(i * 37) % len(agents)] for i in range(LATENCY_RUNS)]  # spread over the agents
        for agent in dict.fromkeys(chosen):  # the workers are up; each chat exists and has had a turn
            _say_and_wait(agent, "warm-up", log)
        samples = [_say_and_wait(agent, f"message {i}", log) for i, agent in enumerate(chosen)]
        time.sleep(IDLE_CPU_SECONDS)  # the replies' graphs finish, the typing indicators expire
        windows = []  # consecutive: each reading ends one window and starts the next
        cpu, wall = _cpu_seconds(process.pid), time.monotonic()
        for _ in range(IDLE_CPU_SAMPLES):
            time.sleep(IDLE_CPU_SECONDS)
            after, end = _cpu_seconds(process.pid), time.monotonic()
            windows.append((after - cpu, end - wall))
            cpu, wall = after, end
        return samples, Windows(tuple(windows))
    finally:
        stop_process(process)


def part_latency(label: str) -> None:
    from cindy_site.testing.fake_llm import FakeLLMServer

    count = int(label)
    server = FakeLLMServer().start()
    server.set_default_reply(json.dumps([{"kind": "send", "text": LATENCY_REPLY}]))
    agents = [make_agent(f"Wake{i:03d}") for i in range(count)]
    from agents.models import Agent

    Agent.objects.update(start_typing_delay=1, typing_speed=1000)  # the fastest typing allowed
    agents = list(Agent.objects.order_by("pk"))
    env = {
        **os.environ,
        "GEMINI_BASE_URL": server.url,
        "GOOGLE_GEMINI_API_KEY": "bench",
        "DEFAULT_AGENT_LLM": "gemini",
        "CINDY_SESSION_KEY": "bench-only",
        "CINDY_READ_DELAY_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
    }
    log = Path(tempfile.mkdtemp()) / "gateway.log"
    try:
        before, before_cpu = _gateway_run(agents, {**env, **POLLING}, log)
        after, after_cpu = _gateway_run(agents, env, log)
    finally:
        server.stop()
    plural = "s" if count > 1 else ""
    print(
        f"sandbox say → reply stored, {count} agent{plural}, less read delay and the typing applied: "
        f"{latency_text(after, before)}"
    )
    print(
        f"gateway process CPU while idle, {count} agent{plural}: {GATEWAY_IDLE.figure(after_cpu.time_average).line()} "
        f"with wake-ups ({GATEWAY_IDLE.figure(before_cpu.time_average, goal=False).text} with the fixed tick); "
        f"{IDLE_WORST.figure(after_cpu.worst).text} of {IDLE_CPU_SAMPLES} × {IDLE_CPU_SECONDS:g} s, median "
        f"{after_cpu.median:.1%}, not compared"
    )


def latency_text(now: list[float], before: list[float]) -> str:
    """Waits in seconds, ms printed: the mean beside its goal, the longest, the median labelled."""
    ms = samples(LATENCY, [v * 1000 for v in now])
    was = samples(LATENCY, [v * 1000 for v in before])
    return (
        f"{LATENCY.figure(statistics.fmean(ms)).line()} (fixed tick and 0.2 s broker poll: "
        f"{LATENCY.figure(statistics.fmean(was), goal=False).text}); {LATENCY_WORST.figure(max(ms)).text} "
        f"(before: {LATENCY_WORST.figure(max(was)).text}); median {statistics.median(ms):.0f} ms, not "
        f"compared; {len(ms)} runs"
    )


# --- driver ---------------------------------------------------------------------------------------------


def mysql_url() -> str | None:
    url = os.environ.get("DATABASE_URL", "") or "mysql://root@127.0.0.1:3306/cindy"
    if not url.startswith("mysql"):
        return None
    try:
        import MySQLdb

        parts = urlsplit(url)
        MySQLdb.connect(
            host=parts.hostname,
            port=parts.port or 3306,
            user=parts.username or "root",
            password=parts.password or "",
        ).close()
    except Exception:
        return None
    return url


def mysql_admin(url: str, statement: str) -> None:
    import MySQLdb

    parts = urlsplit(url)
    with MySQLdb.connect(
        host=parts.hostname,
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
    ) as conn:
        conn.cursor().execute(statement)


def run_part(part: str, env: dict[str, str], label: str = "") -> None:
    result = subprocess.run(
        [sys.executable, __file__, "--part", part, "--label", label, "--env", json.dumps(env)],
        capture_output=True,
        text=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    print("\n".join(lines) if lines else f"{part}: failed\n{result.stderr[-2000:]}")


PARTS = ("overhead", "claims", "idle", "dispatch", "rss", "worker_rss", "latency")


def main(only: set[str]) -> None:
    """Run the parts named in `only` (every part when empty), in order."""
    unknown = only - set(PARTS)
    if unknown:
        sys.exit(f"unknown part {', '.join(sorted(unknown))}: --only takes {', '.join(PARTS)}")
    base = {"SECRET_KEY": "bench-only", "CINDY_ENV_FILE": os.devnull, "LOG_LEVEL": "ERROR"}
    with tempfile.TemporaryDirectory() as tmp:

        def sqlite(name: str) -> dict[str, str]:
            return {**base, "CINDY_SQLITE_PATH": str(Path(tmp) / f"{name}.sqlite3")}

        def wanted(part: str) -> bool:
            return not only or part in only

        if wanted("overhead"):
            run_part("overhead", sqlite("overhead"))
        if wanted("claims"):
            run_part("claims", sqlite("claims"), "SQLite")
            url = mysql_url()
            if url:
                parts = urlsplit(url)
                name = os.environ.get("CINDY_BENCH_DATABASE_NAME") or f"cindy_bench_{os.getpid()}"
                mysql_admin(url, f"DROP DATABASE IF EXISTS {name}")
                mysql_admin(url, f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
                try:
                    run_part(
                        "claims",
                        {**base, "DATABASE_URL": f"{parts.scheme}://{parts.netloc}/{name}"},
                        "MariaDB",
                    )
                finally:
                    mysql_admin(url, f"DROP DATABASE IF EXISTS {name}")
            else:
                print("tick claims on MariaDB: skipped (no MySQL/MariaDB server reachable)")
        for part in ("idle", "dispatch", "rss", "worker_rss"):
            if wanted(part):
                run_part(part, sqlite(part))
        if wanted("latency"):
            for count in LATENCY_AGENTS:
                run_part("latency", sqlite(f"latency{count}"), str(count))


if __name__ == "__main__":
    if "--part" in sys.argv:
        args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        child_env = json.loads(args["--env"])
        for key in ("DATABASE_URL", "REDIS_URL"):
            if key not in child_env:
                os.environ.pop(key, None)
        setup_django(child_env)
        part = args["--part"]
        if part == "overhead":
            part_overhead()
        elif part == "claims":
            part_claims(args["--label"])
        elif part == "idle":
            part_idle()
        elif part == "dispatch":
            part_dispatch()
        elif part == "latency":
            part_latency(args["--label"])
        elif part == "worker_rss":
            part_worker_rss(child_env)
        else:
            part_rss(child_env)
    else:
        only = set()
        if "--only" in sys.argv:
            only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
        main(only)
