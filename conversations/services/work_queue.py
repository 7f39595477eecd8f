"""An operator's hand on the work queue: cancel a conversation's pending graph, one node, or all of an
agent's pending work. Each change is one transaction and leaves a `work_cancelled` activity event.

A running node's worker or handler keeps running, but its result is dropped: every change after a
claim is a compare-and-set on the node still being `running` (see conversations/services/nodes.py).
"""

from __future__ import annotations

from django.db import transaction

from agents.models import Agent
from conversations.models import ActivityEvent, Conversation, NodeStatus, TaskGraph, TaskNode
from conversations.services.activity import record_event
from conversations.services.graph_finish import graph_finish_if_complete
from conversations.services.graphs import graph_active, graph_close

Kind = ActivityEvent.Kind


class WorkQueueError(ValueError):
    """The requested cancellation cannot be done (nothing pending, or the node already started)."""


def _who(by: str) -> str:
    return f" by {by}" if by else ""


def graph_cancel(*, conversation: Conversation, by: str = "") -> int:
    """Cancel the conversation's active graph; returns the number of nodes cancelled."""
    with transaction.atomic():
        graph = graph_active(conversation=conversation)
        if graph is None:
            raise WorkQueueError(f"{conversation}: no pending work to cancel")
        # An operator's cancel ends the turns queued behind it too: nothing starts after it.
        cancelled = graph_close(graph=graph, status=TaskGraph.Status.CANCELLED, start_queued=False)
        record_event(
            Kind.WORK_CANCELLED,
            agent_id=conversation.agent_id,
            conversation_id=conversation.pk,
            summary=f"graph {graph.pk} cancelled{_who(by)}: {cancelled} node(s)",
            data={"graph_id": graph.pk, "cancelled_nodes": cancelled, "by": by},
        )
    return cancelled


def node_cancel(*, node_id: int, by: str = "") -> TaskNode:
    """Cancel one pending node. Nodes that waited for it wait for its own dependencies instead, so
    the rest of the chain still runs in order; the graph finishes if nothing else is left."""
    with transaction.atomic():
        node = TaskNode.objects.select_for_update().select_related("conversation").filter(pk=node_id).first()
        if node is None:
            raise WorkQueueError(f"node {node_id} does not exist")
        if node.status != NodeStatus.PENDING:
            raise WorkQueueError(
                f"{node.kind} #{node.pk} is {node.status}: only pending nodes can be cancelled "
                "(cancel the whole graph to drop a running one)"
            )
        upstream = list(node.depends_on.all())
        for dependent in node.dependents.all():
            dependent.depends_on.remove(node)
            dependent.depends_on.add(*upstream)
        TaskNode.objects.filter(pk=node.pk).update(status=NodeStatus.CANCELLED)
        node.status = NodeStatus.CANCELLED
        record_event(
            Kind.WORK_CANCELLED,
            agent_id=node.agent_id,
            conversation_id=node.conversation_id,
            node_id=node.pk,
            summary=f"{node.kind} #{node.pk} cancelled{_who(by)}",
            data={"graph_id": node.graph_id, "kind": node.kind, "by": by},
        )
        graph_finish_if_complete(graph_id=node.graph_id)
    return node


def agent_pending_work_delete(*, agent: Agent, by: str = "") -> int:
    """Cancel every active graph of the agent; returns the number of graphs cancelled."""
    with transaction.atomic():
        graphs = list(
            TaskGraph.objects.select_for_update()
            .filter(conversation__agent=agent, status=TaskGraph.Status.ACTIVE)
            .select_related("conversation")
        )
        nodes = sum(
            graph_close(graph=graph, status=TaskGraph.Status.CANCELLED, start_queued=False)
            for graph in graphs
        )
        record_event(
            Kind.WORK_CANCELLED,
            agent_id=agent.pk,
            summary=f"all pending work of {agent.name} cancelled{_who(by)}: "
            f"{len(graphs)} graph(s), {nodes} node(s)",
            data={"graph_ids": [g.pk for g in graphs], "cancelled_nodes": nodes, "by": by},
        )
    return len(graphs)
