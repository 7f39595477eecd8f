"""Task node state changes: claim, complete, defer, fail (with retry), reap.

Every change after a claim is a compare-and-set on (status='running', lease_owner=<the claim token>):
a worker or handler that lost its node (the graph was replanned, the lease expired and another
gateway took over) changes nothing and its result is dropped.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from typing import Any

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models.functions import Lower
from django.db.models.lookups import Exact

from agents.models import Agent
from cindy_site import rows
from cindy_site.clock import now
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.selectors import node_claimed
from conversations.services.activity import activity_event, events_insert
from conversations.services.graph_finish import graph_finish_if_complete
from conversations.services.graphs import graph_close

logger = logging.getLogger(__name__)
Kind = ActivityEvent.Kind


def new_claim_token(gateway_id: str) -> str:
    """A claim token unique to one claim batch: `<gateway id>#<nonce>` (see `nodes_claim`)."""
    return f"{gateway_id[:180]}#{secrets.token_hex(6)}"


def event_for(kind: str, node: TaskNode, summary: str, *, when: dt.datetime | None = None, **data: Any):
    """An unsaved activity event about `node` (see `events_record` to store many at once)."""
    return activity_event(
        kind,
        agent_id=node.agent_id,
        conversation_id=node.conversation_id,
        node_id=node.pk,
        summary=f"{node.kind} #{node.pk}: {summary}",
        data={"kind": node.kind, "graph_id": node.graph_id, **data},
        when=when,
    )


def _event(kind: str, node: TaskNode, summary: str, **data: Any) -> None:
    event_for(kind, node, summary, **data).save()


def node_claim(*, node_id: int, owner: str, lease_seconds: int | None = None) -> TaskNode | None:
    """Claim a pending node: compare-and-set to running with a lease. None if someone else got it."""
    won = nodes_claim(node_ids=[node_id], owner=owner, lease_seconds=lease_seconds)
    return won[0] if won else None


def _status_is(status: str) -> Exact:
    """A status test evaluated on each row found by primary key, never through an index: filtered
    as the plain column beside `pk__in`, SQLite (without statistics) walks the status indexes
    instead, every pending node of every conversation, so a claim would cost as much as the backlog,
    and MariaDB reads the won rows through the status index and sorts them."""
    return Exact(Lower("status"), status)


def _claim_one(node_id: int, owner: str, expires: dt.datetime, when: dt.datetime) -> int:
    """A single pending node's compare-and-set to running; the rows changed (0 or 1).

    Plain SQL: one claim per inbound message; `update()` builds and compiles the query (about
    0.2 ms of CPU against 0.02 ms through the cursor; measured in cindy_site/rows.py).
    The status is tested as `_status_is` tests it, on the row found by primary key."""
    connection = connections[router.db_for_write(TaskNode)]
    at = connection.ops.adapt_datetimefield_value
    with transaction.mark_for_rollback_on_error(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {rows.table(TaskNode)} SET status = %s, lease_owner = %s, lease_expires_at = %s, "  # noqa: S608
            "started = %s WHERE id = %s AND LOWER(status) = %s",
            [NodeStatus.RUNNING.value, owner, at(expires), at(when), node_id, NodeStatus.PENDING.value],
        )
        return cursor.rowcount


def nodes_claim(
    *,
    node_ids: list[int],
    owner: str,
    lease_seconds: int | None = None,
    agents: dict[int, Agent] | None = None,
) -> list[TaskNode]:
    """Claim pending nodes in one transaction; returns the nodes won, in `node_ids` order.

    `agents` (id → Agent) are the caller's own agent rows, given to the nodes won instead of reading
    them again (the gateway holds each agent's current row, refreshed every pass).

    One compare-and-set UPDATE over the ids (only rows still pending change), one read of the rows
    now carrying the claim token, one insert of their claimed events (`events_insert`: the rows
    `event_for` would build). A node another gateway claimed first keeps its token and is not
    returned. The token is shared by the batch; every later change checks (node id, token), so it
    still names exactly one claim of each node.
    """
    if not node_ids:
        return []
    when = now()
    lease = dt.timedelta(seconds=lease_seconds or settings.CINDY_NODE_LEASE_SECONDS)
    gateway = owner.split("#")[0]
    single = len(node_ids) == 1
    with transaction.atomic():
        if single:  # a turn's node: plain SQL (`_claim_one`, `node_claimed`)
            changed = _claim_one(int(node_ids[0]), owner, when + lease, when)
        else:
            changed = TaskNode.objects.filter(_status_is(NodeStatus.PENDING), pk__in=node_ids).update(
                status=NodeStatus.RUNNING, lease_owner=owner, lease_expires_at=when + lease, started=when
            )
        if not changed:
            return []
        # A batch has few agents and many nodes: it reads each agent once, not once per node, and
        # leaves out the graphs, which the gateway's dispatch and handlers do not read (a tick's 200
        # nodes cost a fifth less); a single node takes its agent and graph in the join.
        if single:
            claimed = node_claimed(node_id=int(node_ids[0]), owner=owner)
            won = {claimed.pk: claimed} if claimed is not None else {}
        else:
            won = {
                node.pk: node
                for node in TaskNode.objects.select_related("conversation")
                .filter(_status_is(NodeStatus.RUNNING), pk__in=node_ids, lease_owner=owner)
                .order_by()
            }
        if not single:
            known = agents or {}
            missing = {node.agent_id for node in won.values()} - known.keys()
            read = Agent.objects.in_bulk(missing) if missing else {}
            for node in won.values():
                node.agent = known.get(node.agent_id) or read[node.agent_id]
        events_insert(
            Kind.NODE_CLAIMED,
            [
                (
                    node.agent_id,
                    node.conversation_id,
                    node.pk,
                    f"{node.kind} #{node.pk}: claimed by {gateway}",
                    {"kind": node.kind, "graph_id": node.graph_id, "attempt": node.attempts + 1},
                )
                for node in won.values()
            ],
            when=when,
        )
    return [won[pk] for pk in node_ids if pk in won]


def _locked(node_id: int, owner: str) -> TaskNode | None:
    """The node, row-locked, if `owner` still holds it."""
    return (
        TaskNode.objects.select_for_update()
        .filter(pk=node_id, status=NodeStatus.RUNNING, lease_owner=owner)
        .select_related("conversation", "graph")
        .first()
    )


def node_complete(
    *, node_id: int, owner: str, result: dict[str, Any] | None = None, summary: str = ""
) -> bool:
    """Mark a held node done; finishes the graph when nothing is left. False if the node was lost."""
    with transaction.atomic():
        node = _locked(node_id, owner)
        if node is None:
            return False
        node.status, node.finished = NodeStatus.DONE, now()
        node.result = {**node.result, **(result or {})}
        node.lease_owner, node.lease_expires_at, node.error = "", None, ""
        node.save(update_fields=["status", "finished", "result", "lease_owner", "lease_expires_at", "error"])
        _event(Kind.NODE_DONE, node, summary or "done")
        graph_finish_if_complete(graph_id=node.graph_id)
    return True


def node_defer(
    *,
    node_id: int,
    owner: str,
    until: dt.datetime,
    reason: str,
    params: dict[str, Any] | None = None,
) -> bool:
    """Return a held node to pending until `until` without counting an attempt (typing, waits, flood waits)."""
    with transaction.atomic():
        node = _locked(node_id, owner)
        if node is None:
            return False
        node.status, node.not_before = NodeStatus.PENDING, until
        node.lease_owner, node.lease_expires_at = "", None
        if params:
            node.params = {**node.params, **params}
        node.save(update_fields=["status", "not_before", "lease_owner", "lease_expires_at", "params"])
        _event(Kind.NODE_DEFERRED, node, f"{reason}; next at {until:%H:%M:%S}", until=until.isoformat())
    return True


def node_store_random_id(*, node_id: int, owner: str) -> int | None:
    """The node's random_id, generated and committed on first use so every attempt reuses it.

    Committed before the first send attempt (a conditional UPDATE, so two attempts cannot both set
    one): after a crash the retry sends the same random_id and Telegram (or the sandbox) returns the
    earlier message instead of a duplicate. None when the node is no longer held under `owner`.
    """
    held = TaskNode.objects.filter(pk=node_id, status=NodeStatus.RUNNING, lease_owner=owner)
    random_id = secrets.randbits(62) + 1
    if held.filter(random_id__isnull=True).update(random_id=random_id):  # one statement, atomic
        return random_id
    return held.values_list("random_id", flat=True).first()  # an earlier attempt's; None: lost


def node_fail(*, node_id: int, owner: str, error: str, permanent: bool = False) -> str:
    """Record a failed attempt. Returns "retried", "deleted" or "lost".

    Steps: count the attempt; below CINDY_MAX_ATTEMPTS (and not permanent) insert a `wait` node of
    CINDY_RETRY_SECONDS in front of the node and return it to pending; otherwise fail the node and
    delete the graph (its later nodes depend on this one), logging both.
    """
    with transaction.atomic():
        node = _locked(node_id, owner)
        if node is None:
            return "lost"
        node.attempts += 1
        node.error = error[:5000]
        node.lease_owner, node.lease_expires_at = "", None
        _event(Kind.NODE_FAILED, node, error, attempt=node.attempts, permanent=permanent)
        if permanent or node.attempts >= settings.CINDY_MAX_ATTEMPTS:
            node.status, node.finished = NodeStatus.FAILED, now()
            node.save(
                update_fields=["attempts", "error", "lease_owner", "lease_expires_at", "status", "finished"]
            )
            why = "permanent error" if permanent else f"failed {node.attempts} times"
            graph_close(
                graph=node.graph,
                status=TaskGraph.Status.FAILED,
                reason=f"{node.kind} #{node.pk} {why}: {error}",
            )
            logger.warning("node %s (%s) of agent %s %s: %s", node.pk, node.kind, node.agent_id, why, error)
            return "deleted"
        retry_at = now() + dt.timedelta(seconds=settings.CINDY_RETRY_SECONDS)
        wait = TaskNode.objects.create(
            graph_id=node.graph_id,
            conversation_id=node.conversation_id,
            agent_id=node.agent_id,
            kind=NodeKind.WAIT,
            params={"delay": settings.CINDY_RETRY_SECONDS, "retry_of": node.pk},
            sequence=node.sequence,
            not_before=now(),
            created=now(),
        )
        for dependency in node.depends_on.all():
            wait.depends_on.add(dependency)
        node.depends_on.add(wait)
        node.status, node.not_before = NodeStatus.PENDING, retry_at
        node.save(
            update_fields=["attempts", "error", "lease_owner", "lease_expires_at", "status", "not_before"]
        )
        _event(
            Kind.NODE_RETRIED,
            node,
            f"retry {node.attempts + 1} of {settings.CINDY_MAX_ATTEMPTS} after {settings.CINDY_RETRY_SECONDS}s",
            wait_node_id=wait.pk,
        )
        return "retried"


def node_release(*, node_id: int, owner: str, reason: str) -> bool:
    """Put a held node back to pending as it was (the agent stopped or the gateway is shutting down)."""
    with transaction.atomic():
        node = _locked(node_id, owner)
        if node is None:
            return False
        node.status, node.lease_owner, node.lease_expires_at = NodeStatus.PENDING, "", None
        node.save(update_fields=["status", "lease_owner", "lease_expires_at"])
        _event(Kind.NODE_DEFERRED, node, reason)
    return True


def nodes_reap_expired(*, agent_ids: list[int]) -> int:
    """Running nodes of these agents whose lease expired go back to pending (their runner died)."""
    when = now()
    expired = list(
        TaskNode.objects.filter(
            agent_id__in_ids=Ids(agent_ids), status=NodeStatus.RUNNING, lease_expires_at__lt=when
        ).values_list("pk", "lease_owner")
    )
    reaped = 0
    for pk, owner in expired:
        if node_release(node_id=pk, owner=owner, reason="lease expired; back to pending"):
            reaped += 1
    return reaped


def nodes_take_over(*, agent_id: int, gateway_id: str, include_brain: bool = False) -> int:
    """After taking an agent's lease: nodes another gateway left running go back to pending at once.

    Holding the agent lease proves the previous gateway is gone, so its in-flight Telegram actions
    will not finish. Brain kinds (`received`) are the exception: they run on a task worker, which may
    outlive the gateway and still be calling the LLM. They stay running until their node lease expires
    (`nodes_reap_expired` then returns them to pending), so a gateway restart does not pay for a second
    LLM call while the first is still being made. `include_brain` returns them at once too: right when
    the caller knows the previous gateway's workers died with it.
    """
    when = now()
    running = TaskNode.objects.filter(agent_id=agent_id, status=NodeStatus.RUNNING).exclude(
        lease_owner__startswith=f"{gateway_id}#"
    )
    if not include_brain:
        running = running.exclude(kind__in=BRAIN_KINDS, lease_expires_at__gte=when)
    stale = list(running.values_list("pk", "lease_owner"))
    return sum(
        node_release(node_id=pk, owner=owner, reason="previous gateway gone; back to pending")
        for pk, owner in stale
    )


def brain_nodes_release(*, gateway_id: str, reason: str) -> int:
    """Return the gateway's running planning nodes to pending: the task workers that had them died.

    Only for workers that served this gateway alone (its own `runworkers`), killed as a whole: no
    other worker can be running these nodes, so they are planned again at once.
    """
    running = TaskNode.objects.filter(
        status=NodeStatus.RUNNING, kind__in=BRAIN_KINDS, lease_owner__startswith=f"{gateway_id}#"
    ).values_list("pk", "lease_owner")
    return sum(node_release(node_id=pk, owner=owner, reason=reason) for pk, owner in list(running))
