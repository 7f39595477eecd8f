"""Placement: gateways started with `runagents --auto` share the agents among themselves.

Each such gateway registers itself (its `ProcessHeartbeat` row, with its capacity) and, at every
pass, computes its **share**: the agents no other kind of gateway holds are divided among the live
`--auto` gateways that are not draining, each up to its capacity, the smallest capacities served
first (`fleet_shares`). A gateway holding fewer than its share takes unowned or expired leases
(compare-and-set, `engine/leases.py`), at most CLAIM_BATCH per pass; one holding more hands the
surplus back gracefully, at most PLACEMENT_BATCH per pass, agents with nothing running first: it
ingests what their clients already received, disconnects them, releases their leases and wakes the
other gateways, one of which takes them at its next pass. The counts thus even out when a gateway
joins, and orphaned agents (a gateway killed or cut off) are taken once their leases expire.

A gateway drains (`manage.py drain GATEWAY`, or its own shutdown) by setting `drain_requested_at`
on its row: its share becomes 0, it hands back every agent in one pass and takes none until
`manage.py drain --undo`. A live row is one written within 5/6 of CINDY_LEASE_SECONDS (the fence).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q

from agents.models import AgentLease
from cindy_site.clock import now
from cindy_site.lookups import Ids
from conversations.models import NodeStatus, TaskNode
from engine.health import process_beat
from engine.heartbeat import fence_after
from engine.models import ProcessHeartbeat

Kind = ProcessHeartbeat.Kind

#: How many agents a gateway hands back in one pass to even out the counts (a drain: all at once).
PLACEMENT_BATCH = 25
#: How many leases a gateway takes in one pass. Larger: a lease taken is cheap (its client connects
#: in the same pass, and the heartbeat renews it whatever the loop does), and the agents of a gateway
#: that died should have a holder again within one pass of their leases expiring.
CLAIM_BATCH = 100


class DrainError(Exception):
    """`manage.py drain` was given a gateway that has no live row."""


@dataclass(frozen=True)
class Placement:
    """What one pass of an `--auto` gateway should do."""

    share: int  # how many agents it should hold
    draining: bool
    take: list[int]  # unowned or expired agents to try, in order (more than it needs: some may be taken)
    need: int  # how many of `take` to take in this pass
    hand_back: list[int]  # held agents to release now
    gateways: int  # live --auto gateways sharing the agents, this one included unless draining


def fleet_shares(gateways: list[tuple[str, int]], agents: int) -> dict[str, int]:
    """Divide `agents` among `gateways` ((name, capacity)): as evenly as their capacities allow.

    Water-filling, smallest capacity first (ties by name): each gets the rounded-up even share of
    what is left, capped at its capacity. The shares add up to `agents` when the capacities suffice.
    """
    shares: dict[str, int] = {}
    left = agents
    ordered = sorted(gateways, key=lambda g: (g[1], g[0]))
    for index, (name, capacity) in enumerate(ordered):
        even = -(-left // (len(ordered) - index)) if left > 0 else 0
        shares[name] = min(capacity, even)
        left -= shares[name]
    return shares


def _live_since() -> dt.datetime:
    """Rows written since then count as sharing members: a gateway that has written none for 5/6 of
    the lease has fenced itself (engine/heartbeat.py) or is gone, so its share goes to the others."""
    return now() - dt.timedelta(seconds=fence_after())


def placement_register(*, gateway_id: str, capacity: int) -> None:
    """Write the gateway's row with its capacity, before its first pass (it counts from then on)."""
    process_beat(name=gateway_id, kind=Kind.GATEWAY, capacity=capacity)


def gateway_draining(*, gateway_id: str) -> bool:
    return ProcessHeartbeat.objects.filter(name=gateway_id, drain_requested_at__isnull=False).exists()


def placement_plan(
    *, gateway_id: str, capacity: int, wanted: list[int], held: list[int], rng: random.Random | None = None
) -> Placement:
    """This gateway's share of `wanted` (the enabled agents), and which to take or hand back now."""
    at = now()
    rows = list(
        ProcessHeartbeat.objects.filter(kind=Kind.GATEWAY, capacity__gt=0).values_list(
            "name", "capacity", "beat_at", "drain_requested_at"
        )
    )
    placing = {name for name, *_ in rows} | {gateway_id}
    mine = next((row for row in rows if row[0] == gateway_id), None)
    draining = mine is not None and mine[3] is not None
    live_since = _live_since()
    sharing = [
        (name, cap)
        for name, cap, beat_at, drain in rows
        if name != gateway_id and beat_at >= live_since and drain is None
    ]
    if not draining:
        sharing.append((gateway_id, capacity))
    leases = dict(
        AgentLease.objects.filter(agent_id__in_ids=Ids(wanted), expires_at__gte=at).values_list(
            "agent_id", "holder"
        )
    )
    # Agents a gateway without --auto holds (it was given names, or takes all) are not ours to share.
    others = sum(1 for holder in leases.values() if holder not in placing)
    shares = fleet_shares(sharing, len(wanted) - others)
    share = shares.get(gateway_id, 0)
    hand_back: list[int] = []
    take: list[int] = []
    need = 0
    if len(held) > share:
        surplus = len(held) - share
        busy = set(
            TaskNode.objects.filter(agent_id__in_ids=Ids(held), status=NodeStatus.RUNNING).values_list(
                "agent_id", flat=True
            )
        )
        order = sorted(held, key=lambda a: (a in busy, -a))  # idle agents first, newest first
        hand_back = order if draining else order[: min(surplus, PLACEMENT_BATCH)]
    elif len(held) < share:
        free = [agent_id for agent_id in wanted if agent_id not in leases and agent_id not in held]
        (rng or random).shuffle(free)  # gateways joining together rarely race for the same lease
        need = min(share - len(held), CLAIM_BATCH)
        take = free[: need * 2]
    return Placement(
        share=share, draining=draining, take=take, need=need, hand_back=hand_back, gateways=len(sharing)
    )


def gateway_drain_request(*, gateway_id: str, undo: bool = False) -> ProcessHeartbeat:
    """Ask a gateway to hand back its agents (or, `undo`, to take agents again)."""
    row = ProcessHeartbeat.objects.filter(name=gateway_id, kind=Kind.GATEWAY).first()
    if row is None:
        known = ", ".join(ProcessHeartbeat.objects.filter(kind=Kind.GATEWAY).values_list("name", flat=True))
        raise DrainError(
            f"no gateway {gateway_id!r} is registered; running gateways: {known or 'none'} "
            "(see `manage.py health`)"
        )
    if not row.capacity:
        raise DrainError(
            f"gateway {gateway_id} was not started with --auto and does not hand agents back on "
            "request; stop it with SIGTERM (it releases its agents as it exits)"
        )
    row.drain_requested_at = None if undo else now()
    ProcessHeartbeat.objects.filter(pk=row.pk).update(drain_requested_at=row.drain_requested_at)
    return row


def gateway_holdings(*, gateway_id: str) -> int:
    """How many live leases `gateway_id` holds."""
    return AgentLease.objects.filter(Q(holder=gateway_id), expires_at__gte=now()).count()


def idle_transaction_seconds() -> int:
    """How long the database keeps a gateway's session that sits idle inside a write transaction."""
    return max(1, int(settings.CINDY_LEASE_SECONDS * 2 / 3))


def _limit_idle_transactions(sender, connection, **kwargs) -> None:
    if connection.vendor != "mysql":
        return
    with connection.cursor() as cursor:
        try:
            cursor.execute(f"SET SESSION idle_write_transaction_timeout = {idle_transaction_seconds()}")
        except Exception:  # MySQL has no such variable: its sessions end at wait_timeout only
            pass


def fence_database_sessions() -> None:
    """On MariaDB, have the server end this process's sessions that sit idle inside a write
    transaction for 2/3 of the lease (`idle_write_transaction_timeout`), rolling them back.

    A gateway cut off from the database mid-transaction keeps its row locks for as long as the server
    believes the session alive (hours, until TCP keepalive gives up); the gateway that takes its agents
    would wait on them. Ended before the lease expires, they are gone by the time anyone may take over.
    """
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(_limit_idle_transactions, dispatch_uid="engine.placement.idle_transactions")
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            _limit_idle_transactions(None, connection)
