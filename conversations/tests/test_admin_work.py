"""The work-queue and gag actions in the admin changelists."""

from __future__ import annotations

import pytest
from django.urls import reverse

from conversations.models import Conversation, NodeStatus, TaskGraph, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan

pytestmark = pytest.mark.django_db


def _planned(agent) -> tuple[Conversation, TaskNode]:
    chat = Conversation.objects.create(agent=agent, peer_id=1001, kind="dm", title="Alice")
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=None)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE)
    (send,) = graph_append_chain(after=received, tasks=[("send", {"text": "hi"})])
    return chat, send


def _act(client, model: str, action: str, ids: list[int]) -> list[str]:
    """Run an admin action; returns the messages the next page shows."""
    response = client.post(
        reverse(f"admin:{model}_changelist"), {"action": action, "_selected_action": ids}, follow=True
    )
    return [str(message) for message in response.context["messages"]]


def test_the_conversation_action_cancels_the_pending_graph(verified_client, agent, clock):
    chat, _ = _planned(agent)

    shown = _act(verified_client, "conversations_conversation", "cancel_conversation_work", [chat.pk])

    assert shown == [f"{chat}: 1 node(s) cancelled"]
    assert TaskGraph.objects.get(conversation=chat).status == TaskGraph.Status.CANCELLED


def test_the_node_action_cancels_one_node(verified_client, agent, clock):
    _, send = _planned(agent)

    shown = _act(verified_client, "conversations_tasknode", "cancel_nodes", [send.pk])

    assert shown == [f"send #{send.pk} cancelled"]
    assert TaskNode.objects.get(pk=send.pk).status == NodeStatus.CANCELLED


def test_the_agent_action_deletes_all_its_pending_work(verified_client, agent, clock):
    chat, _ = _planned(agent)

    shown = _act(verified_client, "agents_agent", "delete_agent_work", [agent.pk])

    assert shown == [f"{agent.name}: 1 graph(s) cancelled"]
    assert not TaskGraph.objects.filter(conversation=chat, status="active").exists()


def test_the_gag_action_gags_the_conversation(verified_client, agent, clock):
    chat, _ = _planned(agent)

    _act(verified_client, "conversations_conversation", "gag_conversations", [chat.pk])

    assert Conversation.objects.get(pk=chat.pk).gagged
