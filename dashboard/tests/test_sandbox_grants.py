"""A per-agent grant bounds the sandbox groups of the dashboard: the sandbox form finds a group by its
title only among the groups whose every agent the operator may see, and the socket follows only such
chats. Two operators, each granted one agent."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Permission
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent, AgentGrant
from conversations.services.activity import record_event
from dashboard.tests.conftest import OPERATOR_PERMISSIONS, _visitor, make_user
from dashboard.tests.sockets import run_scenario
from dashboard.tests.test_agent_access_socket import _socket, _until
from sandbox.models import SandboxChat, SandboxMessage
from sandbox.services.chats import sandbox_say


def _operator(username: str, agent: Agent):
    user = make_user(username)
    user.user_permissions.add(*Permission.objects.filter(codename__in=OPERATOR_PERMISSIONS))
    AgentGrant.objects.create(user=user, agent=agent)
    return _visitor(user, TOTPDevice.objects.create(user=user, name="phone", confirmed=True))


@pytest.fixture
def cast(db):
    wendy = Agent.objects.create(name="Wendy", phone="+15550000401", instructions="x", transport="sandbox")
    orla = Agent.objects.create(name="Orla", phone="+15550000402", instructions="x", transport="sandbox")
    return {
        "wendy": wendy,
        "orla": orla,
        "wendy_op": _operator("wop", wendy),
        "orla_op": _operator("oop", orla),
    }


def _send(visitor, agent, text: str, group: str):
    data = {"agent": agent.pk, "as_name": "Alice", "group": group, "text": text}
    return visitor.client.post("/dashboard/sandbox/send/", data)


@pytest.mark.django_db
def test_the_sandbox_form_never_joins_another_operator_s_group_by_title(cast, clock):
    wendy, orla = cast["wendy"], cast["orla"]
    theirs = _send(cast["orla_op"], orla, "the code is 4711", "Secret room")
    assert theirs.status_code == 200, theirs.content

    mine = _send(cast["wendy_op"], wendy, "hello", "Secret room")

    assert mine.status_code == 200, mine.content
    orlas_room = SandboxChat.objects.get(pk=theirs.json()["message"]["chat_id"])
    assert mine.json()["message"]["chat_id"] != orlas_room.pk
    assert sorted(orlas_room.members.values_list("name", flat=True)) == ["Alice", "Orla"]
    assert list(SandboxMessage.objects.filter(chat=orlas_room).values_list("text", flat=True)) == [
        "the code is 4711"
    ]
    page = cast["wendy_op"].client.get(
        "/dashboard/sandbox/", {"agent": wendy.pk, "as_name": "Alice", "group": "Secret room"}
    )
    assert page.context["chat"].pk == mine.json()["message"]["chat_id"]
    assert page.context["group_titles"] == ["Secret room"]


@pytest.mark.django_db
def test_the_sandbox_page_does_not_show_a_group_shared_with_an_agent_beyond_the_grant(cast, clock):
    wendy, orla = cast["wendy"], cast["orla"]
    sandbox_say(agent=orla, text="for Orla", as_name="Alice", group="Both")
    sandbox_say(agent=wendy, text="for both", as_name="Alice", group="Both")  # as an owner would

    page = cast["wendy_op"].client.get(
        "/dashboard/sandbox/", {"agent": wendy.pk, "as_name": "Alice", "group": "Both"}
    )

    assert page.status_code == 200 and page.context["chat"] is None
    assert "for Orla" not in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_socket_refuses_a_group_shared_with_an_agent_beyond_the_grant(cast, clock):
    wendy, orla = cast["wendy"], cast["orla"]
    shared = sandbox_say(agent=orla, text="before Wendy came", as_name="Alice", group="Both")
    sandbox_say(agent=wendy, text="for both", as_name="Alice", group="Both")
    own = sandbox_say(agent=wendy, text="only Wendy", as_name="Alice")

    async def scenario():
        socket = await _socket(cast["wendy_op"].session_key)
        await socket.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": shared.chat_id})
        refused = await _until(socket, lambda m: m["type"] in ("error", "sandbox_history"))
        await socket.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": own.chat_id})
        followed = await _until(socket, lambda m: m["type"] in ("error", "sandbox_history"))
        await socket.disconnect()
        return refused, followed[-1]

    refused, followed = run_scenario(scenario)

    assert refused[-1] == {"type": "error", "error": f"sandbox chat {shared.chat_id} does not exist"}
    assert "before Wendy came" not in str(refused)
    assert [m["text"] for m in followed["messages"]] == ["only Wendy"]


@pytest.mark.django_db(transaction=True)
def test_the_socket_stops_following_a_chat_an_ungranted_agent_joins(cast, clock):
    """Once Orla is in the group, the next access check drops it: what is said there afterwards is not
    streamed. (Events go out before sandbox messages in each relay pass, so a message posted before an
    event that was seen, and before a second event, would have arrived before the second event.)"""
    wendy, orla = cast["wendy"], cast["orla"]
    mine = sandbox_say(agent=wendy, text="hello", as_name="Alice", group="Club")

    async def say(**kwargs):
        return await database_sync_to_async(sandbox_say)(**kwargs)

    async def event(summary: str):
        await database_sync_to_async(record_event)("info", agent_id=wendy.pk, summary=summary)

    def is_event(summary: str):
        return lambda m: m["type"] == "event" and m["event"]["summary"] == summary

    async def scenario():
        socket = await _socket(cast["wendy_op"].session_key)
        await socket.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": mine.chat_id})
        followed = await _until(socket, lambda m: m["type"] in ("error", "sandbox_history"))
        await say(agent=orla, text="Orla joins", as_name="Bob", group="Club")  # as an owner would
        await socket.send_json_to({"type": "hello", "last_event_id": 0})  # an access check
        await _until(socket, lambda m: m["type"] == "snapshot")
        await say(agent=wendy, text="said after Orla joined", as_name="Alice", group="Club")
        await event("first")
        seen = await _until(socket, is_event("first"))
        await event("second")
        seen += await _until(socket, is_event("second"))
        await socket.disconnect()
        return followed[-1], seen

    followed, seen = run_scenario(scenario)

    assert followed["type"] == "sandbox_history"
    assert "said after Orla joined" not in str(seen)
