"""The dashboard socket carries only what its user may see (`agents.access`)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent, AgentGrant
from agents.roles import CURATOR
from cindy_site.asgi import application
from conversations.models import Conversation
from conversations.services.activity import record_event
from dashboard.tests.conftest import _visitor, make_user
from dashboard.tests.sockets import RECEIVE_TIMEOUT, run_scenario
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cast(db):
    lola = Agent.objects.create(name="Lola", phone="+15550000301", instructions="x", transport="sandbox")
    bernd = Agent.objects.create(name="Bernd", phone="+15550000302", instructions="x", transport="sandbox")
    user = make_user("cora")
    user.groups.add(Group.objects.get(name=CURATOR))
    grant = AgentGrant.objects.create(user=user, agent=lola)
    visitor = _visitor(user, TOTPDevice.objects.create(user=user, name="phone", confirmed=True))
    for agent in (lola, bernd):
        Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title=f"{agent.name}'s chat")
    return {"lola": lola, "bernd": bernd, "visitor": visitor, "grant": grant}


async def _socket(session_key: str) -> WebsocketCommunicator:
    headers = [
        (b"host", b"localhost"),
        (b"origin", b"http://localhost"),
        (b"cookie", f"sessionid={session_key}".encode()),
    ]
    communicator = WebsocketCommunicator(application, "/ws/dashboard/", headers=headers)
    connected, _ = await communicator.connect(timeout=RECEIVE_TIMEOUT)
    assert connected
    return communicator


async def _until(communicator, predicate) -> list[dict]:
    seen = []
    while True:
        message = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
        seen.append(message)
        if predicate(message):
            return seen


def test_the_snapshot_and_the_live_events_are_the_granted_agents_only(cast, clock):
    lola, bernd = cast["lola"], cast["bernd"]

    async def scenario():
        socket = await _socket(cast["visitor"].session_key)
        await socket.send_json_to({"type": "hello", "last_event_id": 0})
        [snapshot] = await _until(socket, lambda m: m["type"] == "snapshot")
        await database_sync_to_async(record_event)("info", agent_id=bernd.pk, summary="bernd's news")
        await database_sync_to_async(record_event)("info", agent_id=lola.pk, summary="lola's news")
        live = await _until(socket, lambda m: m["type"] == "event" and m["event"]["agent_id"] == lola.pk)
        await socket.disconnect()
        return snapshot, live

    snapshot, live = run_scenario(scenario)

    assert [a["name"] for a in snapshot["agents"]] == ["Lola"]
    assert [c["title"] for c in snapshot["conversations"]] == ["Lola's chat"]
    assert [m["event"]["summary"] for m in live if m["type"] == "event"] == ["lola's news"]
    assert "bernd" not in str(live).lower()


def test_another_agents_sandbox_chat_cannot_be_followed(cast, clock):
    theirs = sandbox_say(agent=cast["bernd"], text="hello Bernd", as_name="Alice")
    mine = sandbox_say(agent=cast["lola"], text="hello Lola", as_name="Alice")

    async def scenario():
        socket = await _socket(cast["visitor"].session_key)
        await socket.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": theirs.chat_id})
        refused = await _until(socket, lambda m: m["type"] in ("error", "sandbox_history"))
        await socket.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": mine.chat_id})
        followed = await _until(socket, lambda m: m["type"] in ("error", "sandbox_history"))
        await socket.disconnect()
        return refused[-1], followed[-1]

    refused, followed = run_scenario(scenario)

    assert refused == {"type": "error", "error": f"sandbox chat {theirs.chat_id} does not exist"}
    assert followed["type"] == "sandbox_history" and [m["text"] for m in followed["messages"]] == [
        "hello Lola"
    ]


def test_a_grant_taken_away_empties_the_stream_at_the_next_check(cast, clock):
    async def scenario():
        socket = await _socket(cast["visitor"].session_key)
        await socket.send_json_to({"type": "hello", "last_event_id": 0})
        [before] = await _until(socket, lambda m: m["type"] == "snapshot")
        await database_sync_to_async(cast["grant"].delete)()
        await socket.send_json_to({"type": "hello", "last_event_id": 0})
        after = await _until(socket, lambda m: m["type"] == "snapshot")
        await socket.disconnect()
        return before, after[-1]

    before, after = run_scenario(scenario)

    assert [a["name"] for a in before["agents"]] == ["Lola"]
    assert after["agents"] == [] and after["conversations"] == []
