"""Operators cancelling work: a conversation's graph, one node, or everything an agent has pending."""

from __future__ import annotations

import pytest

from conversations.models import ActivityEvent, Conversation, NodeStatus, TaskGraph, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan
from conversations.services.work_queue import (
    WorkQueueError,
    agent_pending_work_delete,
    graph_cancel,
    node_cancel,
)

pytestmark = pytest.mark.django_db


def _planned(agent, peer_id: int, sends: int) -> tuple[Conversation, list[TaskNode]]:
    chat = Conversation.objects.create(agent=agent, peer_id=peer_id, kind="dm", title=f"P{peer_id}")
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=None)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE)
    return chat, graph_append_chain(after=received, tasks=[("send", {"text": f"s{i}"}) for i in range(sends)])


def _cancel_events() -> list[str]:
    return list(
        ActivityEvent.objects.filter(kind=ActivityEvent.Kind.WORK_CANCELLED)
        .order_by("id")
        .values_list("summary", flat=True)
    )


def test_cancelling_a_conversation_s_graph_cancels_its_open_nodes(agent, clock):
    chat, sends = _planned(agent, 1001, 2)

    assert graph_cancel(conversation=chat, by="olivia") == 2

    assert set(TaskNode.objects.filter(pk__in=[n.pk for n in sends]).values_list("status", flat=True)) == {
        NodeStatus.CANCELLED
    }
    graph = TaskGraph.objects.get(conversation=chat)
    assert (graph.status, graph.active_slot) == (TaskGraph.Status.CANCELLED, None)
    assert _cancel_events() == [f"graph {graph.pk} cancelled by olivia: 2 node(s)"]


def test_cancelling_without_pending_work_says_so(agent, clock):
    chat = Conversation.objects.create(agent=agent, peer_id=1001, kind="dm", title="Quiet")

    with pytest.raises(WorkQueueError, match="no pending work"):
        graph_cancel(conversation=chat)


def test_cancelling_one_node_lets_the_rest_of_the_chain_run_in_order(agent, clock):
    _, (first, middle, last) = _planned(agent, 1001, 3)

    node_cancel(node_id=middle.pk, by="olivia")

    assert TaskNode.objects.get(pk=middle.pk).status == NodeStatus.CANCELLED
    assert list(last.depends_on.values_list("pk", flat=True)) == [first.pk]
    assert _cancel_events() == [f"send #{middle.pk} cancelled by olivia"]


def test_cancelling_the_last_open_node_finishes_the_graph(agent, clock):
    chat, (only,) = _planned(agent, 1001, 1)

    node_cancel(node_id=only.pk)

    assert TaskGraph.objects.get(conversation=chat).status == TaskGraph.Status.DONE


def test_a_running_node_cannot_be_cancelled_alone(agent, clock):
    _, (send,) = _planned(agent, 1001, 1)
    TaskNode.objects.filter(pk=send.pk).update(status=NodeStatus.RUNNING)

    with pytest.raises(WorkQueueError, match="only pending nodes"):
        node_cancel(node_id=send.pk)


def test_deleting_an_agent_s_pending_work_cancels_every_active_graph(agent, other_agent, clock):
    _planned(agent, 1001, 1)
    _planned(agent, 1002, 2)
    _, kept = _planned(other_agent, 1003, 1)

    assert agent_pending_work_delete(agent=agent, by="olivia") == 2

    assert not TaskGraph.objects.filter(conversation__agent=agent, status="active").exists()
    assert TaskNode.objects.get(pk=kept[0].pk).status == NodeStatus.PENDING
    assert _cancel_events() == [
        f"all pending work of {agent.name} cancelled by olivia: 2 graph(s), 3 node(s)"
    ]
