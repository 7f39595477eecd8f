"""Task graph writes: replanning, and building a plan's nodes.

A conversation has at most one active graph (`TaskGraph.active_slot` is unique). Replanning cancels it
and starts a fresh one whose first node is `received`; the LLM runs only when the tick reaches that
node, so a burst of messages before the tick costs one call.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.services.activity import record_event

Kind = ActivityEvent.Kind
OPEN_NODE_STATUSES = (NodeStatus.PENDING, NodeStatus.RUNNING)


def graph_close(*, graph: TaskGraph, status: str, reason: str = "") -> int:
    """End a graph: its open nodes are cancelled and its active slot freed. Returns nodes cancelled."""
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
    return cancelled


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
    """In one transaction: cancel the active graph and start a new one whose first node is `received`.

    `not_before` delays the `received` node (the read delay after a message); default: now.
    """
    with transaction.atomic():
        previous = graph_active(conversation=conversation)
        if previous is not None:
            graph_close(graph=previous, status=TaskGraph.Status.CANCELLED)
        when = now()
        graph = TaskGraph.objects.create(
            conversation=conversation,
            active_slot=conversation.pk,
            trigger=trigger,
            target_message_id=target_message_id,
            context=context or {},
            created=when,
        )
        node = TaskNode.objects.create(
            graph=graph,
            conversation=conversation,
            agent_id=conversation.agent_id,
            kind=NodeKind.RECEIVED,
            sequence=0,
            not_before=max(when, not_before) if not_before else when,
            created=when,
        )
        record_event(
            Kind.REPLAN,
            agent_id=conversation.agent_id,
            conversation_id=conversation.pk,
            node_id=node.pk,
            summary=f"{trigger} on #{target_message_id}"
            + (f" (replaces graph {previous.pk})" if previous else ""),
            data={"graph_id": graph.pk, "trigger": trigger, "target_message_id": target_message_id},
        )
    return graph


def graph_append_chain(*, after: TaskNode, tasks: Iterable[tuple[str, dict[str, Any]]]) -> list[TaskNode]:
    """Add nodes to `after`'s graph, chained in order: each depends on the one before, the first on `after`."""
    when = now()
    created: list[TaskNode] = []
    previous = after
    for offset, (kind, params) in enumerate(tasks, start=1):
        node = TaskNode.objects.create(
            graph_id=after.graph_id,
            conversation_id=after.conversation_id,
            agent_id=after.agent_id,
            kind=kind,
            params=params,
            sequence=after.sequence + offset,
            not_before=when,
            created=when,
        )
        node.depends_on.add(previous)
        created.append(node)
        previous = node
    return created


def graph_finish_if_complete(*, graph_id: int) -> bool:
    """Mark the graph done once none of its nodes is pending or running."""
    if TaskNode.objects.filter(graph_id=graph_id, status__in=OPEN_NODE_STATUSES).exists():
        return False
    return bool(
        TaskGraph.objects.filter(pk=graph_id, status=TaskGraph.Status.ACTIVE).update(
            status=TaskGraph.Status.DONE, active_slot=None, finished=now()
        )
    )
