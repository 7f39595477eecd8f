"""The dashboard socket: who it refuses, the catch-up after a reconnect, and the relay."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from cindy_site.asgi import application
from cindy_site.clock import now
from conversations.models import Conversation, TaskGraph, TaskNode
from conversations.services.activity import record_event
from dashboard.consumers import CLOSE_NOT_ALLOWED
from dashboard.tests.sockets import RECEIVE_TIMEOUT, receive_kind, run_scenario
from sandbox.models import SandboxMember, SandboxUpdate
from sandbox.services.chats import sandbox_chat_for, sandbox_say, sandbox_user_for_agent

# Consumers reach the database through database_sync_to_async, which closes connections outside
# atomic blocks as a long-lived server must; tests therefore commit instead of wrapping a transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def _communicator(session_key: str | None, *, origin: str = "http://localhost") -> WebsocketCommunicator:
    headers = [(b"host", b"localhost"), (b"origin", origin.encode())]
    if session_key:
        headers.append((b"cookie", f"sessionid={session_key}".encode()))
    return WebsocketCommunicator(application, "/ws/dashboard/", headers=headers)


def _refused(session_key: str | None, **kwargs: Any) -> tuple[bool, Any]:
    async def attempt():
        communicator = _communicator(session_key, **kwargs)
        connected, code = await communicator.connect(timeout=RECEIVE_TIMEOUT)
        if connected:
            await communicator.disconnect()
        return connected, code

    return run_scenario(attempt)


def test_anonymous_socket_is_refused():
    assert _refused(None) == (False, CLOSE_NOT_ALLOWED)


def test_non_staff_socket_is_refused_even_with_a_verified_device(non_staff):
    assert _refused(non_staff.session_key) == (False, CLOSE_NOT_ALLOWED)


def test_staff_without_a_one_time_code_is_refused(unverified):
    assert _refused(unverified.session_key) == (False, CLOSE_NOT_ALLOWED)


def test_staff_whose_session_names_another_users_device_is_refused(foreign_device_visitor):
    assert _refused(foreign_device_visitor.session_key) == (False, CLOSE_NOT_ALLOWED)


def test_staff_whose_device_was_unconfirmed_since_login_is_refused(verified, staff_device):
    staff_device.confirmed = False
    staff_device.save()
    assert _refused(verified.session_key) == (False, CLOSE_NOT_ALLOWED)


def test_foreign_origin_is_refused_for_verified_staff(verified):
    connected, _ = _refused(verified.session_key, origin="https://evil.example")
    assert connected is False


def test_verified_staff_gets_a_snapshot_after_hello(verified, sandbox_agent):
    async def scenario():
        communicator = _communicator(verified.session_key)
        connected, _ = await communicator.connect(timeout=RECEIVE_TIMEOUT)
        assert connected
        await communicator.send_json_to({"type": "hello", "last_event_id": 0})
        snapshot = await receive_kind(communicator, "snapshot")
        await communicator.disconnect()
        return snapshot

    snapshot = run_scenario(scenario)
    assert snapshot["type"] == "snapshot"
    assert [a["name"] for a in snapshot["agents"]] == ["Wendy"]
    assert snapshot["agents"][0]["online"] is False


def test_reconnecting_browser_catches_up_from_its_last_event_id(verified, sandbox_agent):
    seen = record_event("info", agent_id=sandbox_agent.pk, summary="before the disconnect")
    missed = [
        record_event("message_in", agent_id=sandbox_agent.pk, summary="missed one"),
        record_event("message_out", agent_id=sandbox_agent.pk, summary="missed two"),
    ]

    async def scenario():
        communicator = _communicator(verified.session_key)
        await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.send_json_to({"type": "hello", "last_event_id": seen.pk})
        received = [await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT) for _ in range(4)]
        await communicator.disconnect()
        return received

    *events, snapshot = run_scenario(scenario)
    assert [m["type"] for m in events] == ["event", "event", "event"]
    # The last event it saw comes again (ids may commit out of order): the browser drops repeats.
    assert [m["event"]["id"] for m in events] == [seen.pk] + [e.pk for e in missed]
    assert events[-1]["event"]["summary"] == "missed two"
    assert snapshot["type"] == "snapshot"
    assert snapshot["last_event_id"] == missed[-1].pk


def test_a_browser_that_missed_more_than_the_limit_gets_a_reset_to_the_newest_events(verified, sandbox_agent):
    from conversations.models import ActivityEvent
    from dashboard.consumers import CATCHUP_OVERLAP
    from dashboard.selectors import EVENT_LIMIT

    seen = record_event("info", agent_id=sandbox_agent.pk, summary="before the disconnect")
    missed = EVENT_LIMIT + CATCHUP_OVERLAP + 20
    ActivityEvent.objects.bulk_create(
        ActivityEvent(kind="info", agent=sandbox_agent, summary=f"missed {n}", created=now())
        for n in range(missed)
    )
    newest = list(ActivityEvent.objects.order_by("-id").values_list("id", flat=True)[:EVENT_LIMIT])

    async def scenario():
        communicator = _communicator(verified.session_key)
        await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.send_json_to({"type": "hello", "last_event_id": seen.pk})
        first = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
        second = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
        await communicator.disconnect()
        return first, second

    reset, snapshot = run_scenario(scenario)
    assert reset["type"] == "events_reset"
    assert [e["id"] for e in reset["events"]] == sorted(newest)
    assert reset["events"][-1]["summary"] == f"missed {missed - 1}"
    assert snapshot["type"] == "snapshot"


def test_bad_hello_gets_an_error_that_says_what_to_send(verified):
    async def scenario():
        communicator = _communicator(verified.session_key)
        await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.send_json_to({"type": "hello", "last_event_id": "yesterday"})
        answer = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
        await communicator.disconnect()
        return answer

    answer = run_scenario(scenario)
    assert answer == {"type": "error", "error": "last_event_id and sandbox_chat_id must be integers"}


def _make_graph(agent) -> TaskNode:
    conversation = Conversation.objects.create(agent=agent, peer_id=42, kind="dm", title="Alice")
    graph = TaskGraph.objects.create(
        conversation=conversation, trigger="message", created=now(), active_slot=conversation.pk
    )
    return TaskNode.objects.create(
        graph=graph, conversation=conversation, agent=agent, kind="received", not_before=now(), created=now()
    )


REDIS_URL = os.environ.get("CINDY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


@pytest.fixture(params=["in-memory", "redis"])
def channel_layer(request, settings) -> str:
    """The relay must work on the embedded default (in-memory layer) and on Redis alike."""
    if request.param == "redis":
        settings.CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [REDIS_URL], "prefix": f"cindy-test-{os.getpid()}"},
            }
        }
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    expected = "RedisChannelLayer" if request.param == "redis" else "InMemoryChannelLayer"
    assert type(get_channel_layer()).__name__ == expected
    return request.param


def test_events_written_elsewhere_are_relayed_with_a_fresh_graph(verified, sandbox_agent, channel_layer):
    node = _make_graph(sandbox_agent)

    async def scenario():
        communicator = _communicator(verified.session_key)
        await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.send_json_to({"type": "hello", "last_event_id": 0})
        await receive_kind(communicator, "snapshot")

        def fail_node():
            TaskNode.objects.filter(pk=node.pk).update(status="failed", attempts=10, error="gave up")
            return record_event(
                "node_failed",
                agent_id=sandbox_agent.pk,
                conversation_id=node.conversation_id,
                node_id=node.pk,
                summary="received failed",
            )

        event = await database_sync_to_async(fail_node)()
        relayed = {}
        while not {"event", "conversation"} <= set(relayed):
            message = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
            relayed.setdefault(message["type"], message)
        await communicator.disconnect()
        return event, relayed

    event, relayed = run_scenario(scenario)
    assert relayed["event"]["event"]["id"] == event.pk
    graph = relayed["conversation"]["conversation"]["graph"]
    assert graph["nodes"][0] == graph["nodes"][0] | {"status": "failed", "attempts": 10, "error": "gave up"}


def test_sandbox_chat_follower_gets_history_then_new_messages(verified, sandbox_agent, channel_layer):
    first = sandbox_say(agent=sandbox_agent, text="hello", as_name="Alice")
    chat = sandbox_chat_for(agent=sandbox_agent, as_name="Alice")

    async def scenario():
        communicator = _communicator(verified.session_key)
        await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": chat.pk})
        await receive_kind(communicator, "snapshot")
        history = await receive_kind(communicator, "sandbox_history")
        await database_sync_to_async(sandbox_say)(agent=sandbox_agent, text="are you there?", as_name="Alice")
        live = await receive_kind(communicator, "sandbox_message")
        await communicator.disconnect()
        return history, live

    history, live = run_scenario(scenario)
    assert history["type"] == "sandbox_history"
    assert [m["text"] for m in history["messages"]] == ["hello"]
    assert history["messages"][0]["message_id"] == first.message_id
    assert live["type"] == "sandbox_message"
    assert live["message"]["text"] == "are you there?"
    assert live["message"]["sender"] == "Alice"


def test_agent_typing_in_a_followed_chat_is_relayed(verified, sandbox_agent, clock):
    sandbox_say(agent=sandbox_agent, text="hello", as_name="Alice")
    chat = sandbox_chat_for(agent=sandbox_agent, as_name="Alice")
    me = sandbox_user_for_agent(agent=sandbox_agent)

    def agent_starts_typing():
        # What SandboxTransport.set_typing writes from the gateway process.
        SandboxMember.objects.filter(chat=chat, user=me).update(
            typing_until=clock.now() + dt.timedelta(seconds=6)
        )
        SandboxUpdate.objects.create(chat=chat, kind=SandboxUpdate.Kind.TYPING, actor=me, created=clock.now())

    async def scenario():
        communicator = _communicator(verified.session_key)
        await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.send_json_to({"type": "hello", "last_event_id": 0, "sandbox_chat_id": chat.pk})
        history = await receive_kind(communicator, "sandbox_history")
        await database_sync_to_async(agent_starts_typing)()
        typing = await receive_kind(communicator, "sandbox_typing")
        await communicator.disconnect()
        return history, typing

    history, typing = run_scenario(scenario)
    assert history["typing"] == []
    assert typing == {"type": "sandbox_typing", "chat_id": chat.pk, "typing": ["Wendy"]}
