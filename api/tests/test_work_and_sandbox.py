"""/api/v1/agents/{id}/work (list, cancel) and /sandbox/messages (say, show)."""

from __future__ import annotations

import pytest

from conversations.models import ActivityEvent, Conversation, NodeStatus, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan
from engine.tests.cast import make_agent
from sandbox.models import SandboxMessage

pytestmark = pytest.mark.django_db


def _planned(agent, peer_id: int, sends: int) -> tuple[Conversation, list[TaskNode]]:
    chat = Conversation.objects.create(agent=agent, peer_id=peer_id, kind="dm", title=f"P{peer_id}")
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=None)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE)
    return chat, graph_append_chain(after=received, tasks=[("send", {"text": f"s{i}"}) for i in range(sends)])


def test_the_queue_lists_pending_work_and_cancels_one_node(api, wendy, heidi, clock):
    _, (first, second) = _planned(wendy, 1001, 2)
    _planned(heidi, 2002, 1)

    listed = api.get(f"/agents/{wendy.pk}/work").json()
    assert [(n["id"], n["kind"], n["status"]) for n in listed["items"]] == [
        (first.pk, "send", "pending"),
        (second.pk, "send", "pending"),
    ]
    cancelled = api.post(f"/agents/{wendy.pk}/work/{first.pk}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    assert [n["id"] for n in api.get(f"/agents/{wendy.pk}/work").json()["items"]] == [second.pk]
    assert ActivityEvent.objects.filter(kind=ActivityEvent.Kind.WORK_CANCELLED).get().summary == (
        f"send #{first.pk} cancelled by owner"
    )


def test_a_started_node_cannot_be_cancelled_alone(api, wendy, clock):
    _, (node,) = _planned(wendy, 1001, 1)
    TaskNode.objects.filter(pk=node.pk).update(status=NodeStatus.RUNNING)

    refused = api.post(f"/agents/{wendy.pk}/work/{node.pk}/cancel")
    assert refused.status_code == 409
    assert "only pending nodes can be cancelled" in refused.json()["detail"]


def test_cancelling_a_conversation_s_work(api, wendy, clock):
    chat, _ = _planned(wendy, 1001, 2)
    assert api.post(f"/agents/{wendy.pk}/conversations/{chat.pk}/cancel-work").json() == {
        "cancelled_nodes": 2
    }
    assert api.post(f"/agents/{wendy.pk}/conversations/{chat.pk}/cancel-work").status_code == 409


def test_another_agent_s_node_is_404_and_cancelling_needs_the_permission(
    api, api_as, make_staff, wendy, heidi, clock
):
    _, (theirs,) = _planned(heidi, 2002, 1)
    _, (mine,) = _planned(wendy, 1001, 1)
    assert api.post(f"/agents/{wendy.pk}/work/{theirs.pk}/cancel").status_code == 404

    watcher = api_as(make_staff("watcher", "agents.view_agent", "conversations.view_tasknode"))
    assert watcher.get(f"/agents/{wendy.pk}/work").json()["count"] == 1
    assert watcher.post(f"/agents/{wendy.pk}/work/{mine.pk}/cancel").status_code == 403
    assert api_as(make_staff("nobody")).get(f"/agents/{wendy.pk}/work").status_code == 404
    assert TaskNode.objects.get(pk=mine.pk).status == NodeStatus.PENDING


def test_saying_something_in_the_sandbox_and_reading_the_chat(api, wendy, clock):
    said = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "Hello Wendy!", "as_name": "Ann"})
    assert said.status_code == 201, said.content
    assert (said.json()["sender"], said.json()["from_agent"]) == ("Ann", False)

    shown = api.get(f"/agents/{wendy.pk}/sandbox/messages", as_name="Ann").json()
    assert [(m["sender"], m["text"]) for m in shown["items"]] == [("Ann", "Hello Wendy!")]
    assert api.get(f"/agents/{wendy.pk}/sandbox/messages", as_name="Bob").json()["items"] == []


def test_the_sandbox_form_s_rules_apply(api, wendy, clock):
    telegram = make_agent("Tess", phone="+15550000009", transport="telegram")

    own_name = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi", "as_name": "Wendy"})
    assert (own_name.status_code, own_name.json()["field"]) == (422, "as_name")
    assert "own name" in own_name.json()["detail"]
    on_telegram = api.post(f"/agents/{telegram.pk}/sandbox/messages", {"text": "hi"})
    assert (on_telegram.status_code, on_telegram.json()["field"]) == (422, "agent")
    bad_reply = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi", "reply_to": 99})
    assert (bad_reply.status_code, bad_reply.json()["field"]) == (422, "reply_to")
    assert not SandboxMessage.objects.exists()


def test_saying_needs_the_sandbox_permission(api_as, make_staff, wendy, clock):
    viewer = api_as(make_staff("viewer", "agents.view_agent", "sandbox.view_sandboxmessage"))
    assert viewer.get(f"/agents/{wendy.pk}/sandbox/messages").status_code == 200
    assert viewer.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi"}).status_code == 403
    assert (
        api_as(make_staff("nobody")).post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi"}).status_code
        == 404
    )
    assert not SandboxMessage.objects.exists()
