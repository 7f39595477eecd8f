"""The admin as a console: every model is there, pages render, runtime rows cannot be edited."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from agents.models import (
    Agent,
    AgentLease,
    GatewayRequest,
    RolePrompt,
    TelegramEntity,
    TelegramSession,
    TelegramUpdateState,
)
from conversations.models import (
    ActivityEvent,
    Conversation,
    Message,
    TaskGraph,
    TaskNode,
)
from llm.models import LLMCall, ModelPrice
from media_catalog.models import MediaDescription, Sticker, StickerSet
from memory.models import Intention, Memory, Plan, Summary
from sandbox.models import SandboxChat, SandboxMember, SandboxMessage, SandboxUpdate, SandboxUser

pytestmark = pytest.mark.django_db

OUR_APPS = ("agents", "conversations", "memory", "media_catalog", "api", "llm", "sandbox")
T0 = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def world():
    """One of everything, linked the way the engine links them."""
    agent = Agent.objects.create(name="Heidi", phone="+15550002", instructions="Be <b>kind</b>.")
    RolePrompt.objects.create(name="Chatbot", text="Reply in JSON.")
    RolePrompt.objects.create(name="Chatbot", text="Heidi's own.", agent=agent)
    AgentLease.objects.create(
        agent=agent, holder="host:1:abc", acquired_at=T0, heartbeat_at=T0, expires_at=T0
    )
    TelegramSession.objects.create(agent=agent, dc_id=2)
    TelegramEntity.objects.create(agent=agent, entity_id=5, access_hash=9, username="bob")
    TelegramUpdateState.objects.create(agent=agent, entity_id=0, pts=1, qts=0, date=T0, seq=1)
    GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.SEND_OTP,
        params={"user_id": 1, "text": "code 123456"},
        created=T0,
    )
    conversation = Conversation.objects.create(agent=agent, peer_id=5, kind=Conversation.Kind.DM, title="Bob")
    Message.objects.create(
        conversation=conversation, message_id=1, sender_name="<script>x</script>", date=T0, text="hi"
    )
    graph = TaskGraph.objects.create(conversation=conversation, trigger="message", created=T0)
    received = TaskNode.objects.create(
        graph=graph, conversation=conversation, agent=agent, kind="received", not_before=T0, created=T0
    )
    send = TaskNode.objects.create(
        graph=graph,
        conversation=conversation,
        agent=agent,
        kind="send",
        sequence=1,
        not_before=T0,
        created=T0,
    )
    send.depends_on.add(received)
    ActivityEvent.objects.create(
        created=T0, kind="node_done", agent=agent, conversation=conversation, node_id=send.pk
    )
    LLMCall.objects.create(
        created=T0, agent=agent, conversation=conversation, provider="gemini", model="gemini-x"
    )
    ModelPrice.objects.create(
        provider="gemini",
        model_prefix="gemini-",
        input_per_million=Decimal("0.3"),
        output_per_million=Decimal("2.5"),
    )
    Memory.objects.create(agent=agent, kind="curated", partner_id=5, content="Likes tea")
    Plan.objects.create(agent=agent, channel_id=5, content="Ask about tea", created=T0)
    Summary.objects.create(agent=agent, channel_id=5, content="They met", created=T0)
    Intention.objects.create(agent=agent, content="Say hi to Ann", created=T0)
    MediaDescription.objects.create(
        unique_id="AgADx", kind="sticker", sticker_set_name="Cats", sticker_name="😺"
    )
    sticker_set = StickerSet.objects.create(short_name="Cats")
    Sticker.objects.create(sticker_set=sticker_set, name="😺", unique_id="AgADx")
    user = SandboxUser.objects.create(user_id=5, name="Bob")
    chat = SandboxChat.objects.create(kind="dm", peer_id=5)
    SandboxMember.objects.create(chat=chat, user=user)
    SandboxMessage.objects.create(chat=chat, message_id=1, sender=user, date=T0, text="hi")
    SandboxUpdate.objects.create(chat=chat, kind="new_message", message_id=1, actor=user, created=T0)
    return {"agent": agent, "conversation": conversation, "graph": graph, "node": send}


def test_every_model_of_every_app_is_on_the_admin():
    missing = [
        model._meta.label
        for app in OUR_APPS
        for model in apps.get_app_config(app).get_models()
        if model not in admin.site._registry
    ]
    assert missing == []


def test_every_changelist_and_change_page_renders(verified_client, world):
    failures = []
    for model in admin.site._registry:
        meta = model._meta
        if meta.app_label not in OUR_APPS:
            continue
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        if (status := verified_client.get(url).status_code) != 200:
            failures.append((url, status))
        obj = model.objects.first()
        if obj is not None:
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
            if (status := verified_client.get(url).status_code) != 200:
                failures.append((url, status))
    assert failures == []


@pytest.mark.parametrize(
    "model",
    [ActivityEvent, LLMCall, Message, TaskNode, TaskGraph, AgentLease, GatewayRequest, SandboxMessage],
)
def test_runtime_records_cannot_be_added_changed_or_deleted(rf, staff_user, model):
    model_admin = admin.site._registry[model]
    request = rf.get("/")
    request.user = staff_user
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_posting_to_an_activity_event_is_refused(verified_client, world):
    event = ActivityEvent.objects.get()
    url = reverse("admin:conversations_activityevent_change", args=[event.pk])
    response = verified_client.post(url, {"summary": "rewritten"})
    assert response.status_code == 403
    event.refresh_from_db()
    assert event.summary == ""


def test_a_node_links_to_its_graph_conversation_and_agent(verified_client, world):
    node = world["node"]
    body = verified_client.get(
        reverse("admin:conversations_tasknode_change", args=[node.pk])
    ).content.decode()
    assert reverse("admin:conversations_taskgraph_change", args=[world["graph"].pk]) in body
    assert reverse("admin:conversations_conversation_change", args=[world["conversation"].pk]) in body
    assert reverse("admin:agents_agent_change", args=[world["agent"].pk]) in body
    assert "received #" in body  # its dependency


def test_a_conversation_shows_its_messages_and_nodes_inline_with_names_escaped(verified_client, world):
    url = reverse("admin:conversations_conversation_change", args=[world["conversation"].pk])
    body = verified_client.get(url).content.decode()
    assert "&lt;script&gt;x&lt;/script&gt;" in body
    assert "<script>x</script>" not in body
    assert "messages (newest" in body.lower() and "task nodes (newest" in body.lower()


def test_the_gateway_request_page_hides_one_time_codes(verified_client, world):
    row = GatewayRequest.objects.get()
    body = verified_client.get(reverse("admin:agents_gatewayrequest_change", args=[row.pk])).content.decode()
    assert "123456" not in body


def test_the_agent_page_has_prompt_and_memory_inlines_and_related_links(verified_client, world):
    agent = world["agent"]
    body = verified_client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()
    assert "Heidi&#x27;s own." in body or "Heidi's own." in body
    assert "Likes tea" in body
    assert f"/admin/conversations/conversation/?agent__id__exact={agent.pk}" in body


def test_conversation_list_links_the_active_graph_without_a_query_per_row(
    verified_client, world, django_assert_max_num_queries
):
    agent = world["agent"]
    for peer in range(100, 120):
        conversation = Conversation.objects.create(agent=agent, peer_id=peer, kind=Conversation.Kind.DM)
        TaskGraph.objects.create(conversation=conversation, trigger="message", created=T0)

    with django_assert_max_num_queries(15):
        body = verified_client.get("/admin/conversations/conversation/").content.decode()

    graph = world["graph"]
    assert (
        f'<a href="{reverse("admin:conversations_taskgraph_change", args=[graph.pk])}">graph {graph.pk}</a>'
        in body
    )


def test_sticker_list_links_each_sticker_to_its_description(verified_client, world):
    description = MediaDescription.objects.get(unique_id="AgADx")
    body = verified_client.get("/admin/media_catalog/sticker/").content.decode()
    assert reverse("admin:media_catalog_mediadescription_change", args=[description.pk]) in body


def test_the_agent_page_shows_which_prompt_each_role_prompt_name_resolves_to(verified_client, world):
    agent = world["agent"]
    agent.role_prompt_names = ["Chatbot", "Nowhere"]
    agent.save()
    own = RolePrompt.objects.get(agent=agent, name="Chatbot")

    body = verified_client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    assert f'{reverse("admin:agents_roleprompt_change", args=[own.pk])}">Chatbot (Heidi)</a>' in body
    assert "Nowhere: missing" in body
