"""Task graph writes: replanning, and building a plan's nodes.

A conversation has at most one active graph (`TaskGraph.active_slot` is unique). Replanning starts a
fresh one whose first node is `received`; the LLM runs only when the tick reaches that node, so a
burst of messages before the tick costs one call. What the active graph was for is never dropped: it
joins the new turn, or the new trigger queues behind it (`conversations.services.carry`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from cindy_site.clock import now
from cindy_site.rows import insert as insert_row
from conversations.models import ActivityEvent, Conversation, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.selectors import graph_active_locked
from conversations.services import carry
from conversations.services.activity import record_event
from conversations.services.wake import wake_gateways_on_commit

Kind = ActivityEvent.Kind
OPEN_NODE_STATUSES = (NodeStatus.PENDING, NodeStatus.RUNNING)


def graph_close(*, graph: TaskGraph, status: str, reason: str = "", start_queued: bool = True) -> int:
    """End a graph: its open nodes are cancelled and its active slot freed. Returns nodes cancelled.

    Triggers queued behind the graph then start (`start_queued`; a replan takes them over itself).
    """
    when = now()
    cancelled = TaskNode.objects.filter(graph=graph, status__in=OPEN_NODE_STATUSES).update(
        status=NodeStatus.CANCELLED, finished=when, lease_owner="", lease_expires_at=None
    )
    TaskGraph.objects.filter(pk=graph.pk).update(status=status, active_slot=None, finished=when)
    graph.status, graph.active_slot, graph.finished = status, None, when
    if status == TaskGraph.Status.FAILED:
        record_event(
            Kind.GRAPH_DELETED,
            agent_id=graph.conversation.agent_id,
            conversation_id=graph.conversation_id,
            summary=f"graph {graph.pk} deleted: {reason}"[:2000],
            data={"graph_id": graph.pk, "cancelled_nodes": cancelled},
        )
    if start_queued:
        graph_start_queued(graph=graph)
    return cancelled


def graph_start_queued(*, graph: TaskGraph) -> TaskGraph | None:
    """Start the triggers that waited behind the ended `graph`, in order (they join or queue again)."""
    started = None
    for item in (graph.context or {}).get("queued") or []:
        started = graph_replan(
            conversation=graph.conversation,
            trigger=item["trigger"],
            target_message_id=item.get("target_message_id"),
            context=item.get("context") or {},
        )
    return started


def graph_active(*, conversation: Conversation) -> TaskGraph | None:
    return TaskGraph.objects.filter(active_slot=conversation.pk).select_related("conversation").first()


def graph_replan(
    *,
    conversation: Conversation,
    trigger: str,
    target_message_id: int | None,
    context: dict[str, Any] | None = None,
    not_before: dt.datetime | None = None,
) -> TaskGraph:
    """In one transaction: start a new turn whose first node is `received`, keeping what the active
    graph was for (`conversations.services.carry`):

    1. No active graph: start the new one.
    2. The active graph has not started planning: cancel it; the new graph carries its triggers.
    3. A newer message while an older one's answer is planned: cancel it, carrying its messages.
    4. Otherwise the new trigger queues behind the active graph, which is returned.

    `not_before` delays the `received` node (the read delay after a message); default: now.
    """
    with transaction.atomic():
        previous = graph_active_locked(conversation_id=conversation.pk)
        mode = carry.replan_mode(previous, trigger) if previous is not None else None
        if mode == carry.QUEUE:
            return _queue_behind(
                previous, trigger=trigger, target_message_id=target_message_id, context=context
            )
        context = dict(context or {})
        carried: list[dict[str, Any]] = []
        if previous is not None:
            graph_close(graph=previous, status=TaskGraph.Status.CANCELLED, start_queued=False)
            carried, queued = carry.carried_into(
                previous, trigger=trigger, target_message_id=target_message_id
            )
            if carried:
                context["carried"] = carried
            if queued:
                context["queued"] = queued
        when = now()
        graph = insert_row(
            TaskGraph(
                conversation=conversation,
                active_slot=conversation.pk,
                trigger=trigger,
                target_message_id=target_message_id,
                context=context,
                created=when,
            )
        )
        node = insert_row(
            TaskNode(
                graph=graph,
                conversation=conversation,
                agent_id=conversation.agent_id,
                kind=NodeKind.RECEIVED,
                sequence=0,
                not_before=max(when, not_before) if not_before else when,
                created=when,
            )
        )
        record_event(
            Kind.REPLAN,
            agent_id=conversation.agent_id,
            conversation_id=conversation.pk,
            node_id=node.pk,
            summary=(f"{trigger} on #{target_message_id}" if target_message_id is not None else trigger)
            + (f" (replaces graph {previous.pk})" if previous else "")
            + (f"; carries {carry.describe(carried)}" if carried else ""),
            data={
                "graph_id": graph.pk,
                "trigger": trigger,
                "target_message_id": target_message_id,
                "carried": carry.describe(carried),
            },
        )
        wake_gateways_on_commit([conversation.agent_id], turn=True)
    return graph


def _queue_behind(
    previous: TaskGraph, *, trigger: str, target_message_id: int | None, context: dict[str, Any] | None
) -> TaskGraph:
    """Queue a trigger behind the active graph (it starts when that graph ends); returns that graph.

    `previous` is the row graph_replan read and locked in this transaction, so its context is current.
    """
    item = {"trigger": trigger, "target_message_id": target_message_id, "context": context or {}}
    previous.context = {
        **(previous.context or {}),
        "queued": [*(previous.context or {}).get("queued", []), item],
    }
    previous.save(update_fields=["context"])
    record_event(
        Kind.REPLAN,
        agent_id=previous.conversation.agent_id,
        conversation_id=previous.conversation_id,
        summary=f"{carry.describe([item])} queued behind graph {previous.pk}, which is under way",
        data={
            "graph_id": previous.pk,
            "trigger": trigger,
            "target_message_id": target_message_id,
            "queued": True,
        },
    )
    return previous


@dataclass(frozen=True)
class PlannedNode:
    """A node to add to a graph: its kind and params, the reply's id for it, and the ids it waits for.

    `depends_on` None means "after the node before it" (a chain, the default); a tuple names the
    planned nodes it waits for (an empty tuple: only the node the plan was made by).
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    key: str | None = None
    depends_on: tuple[str, ...] | None = None


def graph_append_plan(*, after: TaskNode, nodes: Sequence[PlannedNode]) -> list[TaskNode]:
    """Add `nodes` to `after`'s graph, in order, with their dependencies as TaskNode edges.

    A node without `depends_on` depends on the node before it (the first on `after`); a node with it
    depends on the planned nodes with those keys (before or after it), or on `after` alone when none
    is named. Edges are resolved by `plan_edges`, which keeps the graph acyclic.
    """
    when = now()
    created: list[TaskNode] = []
    if nodes:
        wake_gateways_on_commit([after.agent_id], turn=True)
    for offset, planned in enumerate(nodes, start=1):
        created.append(
            TaskNode.objects.create(
                graph_id=after.graph_id,
                conversation_id=after.conversation_id,
                agent_id=after.agent_id,
                kind=planned.kind,
                params=planned.params,
                sequence=after.sequence + offset,
                not_before=when,
                created=when,
            )
        )
    through = TaskNode.depends_on.through
    links = []
    for index, targets in enumerate(plan_edges(nodes)):
        for target in targets:
            dependency = after if target is None else created[target]
            links.append(through(from_tasknode_id=created[index].pk, to_tasknode_id=dependency.pk))
    through.objects.bulk_create(links)
    return created


def plan_edges(nodes: Sequence[PlannedNode]) -> list[list[int | None]]:
    """For each node, the indexes of the nodes it depends on (None: the planning node).

    Keys that name no planned node are ignored (the task they named was stored, dropped or never
    existed), so is a node naming itself. If the named dependencies form a cycle, which would leave the
    graph waiting forever, they are all ignored and the nodes run in order, as a chain.
    """
    index_of = {planned.key: index for index, planned in enumerate(nodes) if planned.key is not None}
    edges: list[list[int | None]] = []
    for index, planned in enumerate(nodes):
        if planned.depends_on is None:
            edges.append([index - 1 if index else None])
            continue
        targets = [index_of[key] for key in planned.depends_on if index_of.get(key, index) != index]
        edges.append(list(dict.fromkeys(targets)) or [None])
    if _has_cycle(edges):
        return [[index - 1 if index else None] for index in range(len(nodes))]
    return edges


def _has_cycle(edges: list[list[int | None]]) -> bool:
    """Kahn's algorithm: the graph is acyclic exactly when every node can be ordered."""
    waiting = [sum(1 for target in targets if target is not None) for targets in edges]
    dependents: dict[int, list[int]] = {}
    for index, targets in enumerate(edges):
        for target in targets:
            if target is not None:
                dependents.setdefault(target, []).append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    ordered = 0
    while ready:
        index = ready.pop()
        ordered += 1
        for dependent in dependents.get(index, []):
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    return ordered != len(edges)


def graph_append_chain(*, after: TaskNode, tasks: Iterable[tuple[str, dict[str, Any]]]) -> list[TaskNode]:
    """Add nodes to `after`'s graph, chained in order: each depends on the one before, the first on `after`."""
    return graph_append_plan(after=after, nodes=[PlannedNode(kind, params) for kind, params in tasks])
