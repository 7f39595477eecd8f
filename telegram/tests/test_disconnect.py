"""A lost Telegram connection as the gateway sees it.

Telethon reconnects by itself after a network blip and keeps `is_connected()` true meanwhile; it
fetches what it missed from its stored update state. When its reconnect attempts fail, or its update
loop stops, `is_connected()` turns false: `poll_updates` must then raise, so the gateway's supervisor
builds a new client and the reconciler fills the gap from history.
"""

from __future__ import annotations

import pytest
from telethon import errors
from telethon.tl import types

from conversations.models import ActivityEvent, Message, TaskGraph
from conversations.transport.base import AuthError, FloodWait, NewMessage, TransportError
from engine.tests.harness import Harness
from telegram import TelethonTransport

from .conftest import GATEWAY, run
from .doubles import DATE, ME_ID, ChatServer, FakeTelegramClient, user

ANN = 501


def note(message_id: int) -> types.UpdateNewMessage:
    message = types.Message(id=message_id, peer_id=types.PeerUser(ANN), date=DATE, message=f"m{message_id}")
    return types.UpdateNewMessage(message=message, pts=message_id, pts_count=1)


def test_a_poll_is_pending_only_with_updates_queued_or_the_connection_gone(transport, fake_client):
    assert transport.poll_pending is False  # connected, nothing queued: the gateway does not poll
    run(fake_client.dispatch, note(1))
    assert transport.poll_pending is True
    run(transport.poll_updates)
    assert transport.poll_pending is False
    fake_client.connected = False  # Telethon gave up reconnecting: the poll reports it
    assert transport.poll_pending is True


def test_a_blip_that_telethon_bridges_is_not_reported(transport, fake_client):
    assert fake_client.is_connected()
    assert run(transport.poll_updates) == []


def test_queued_updates_are_handed_over_before_the_lost_connection_is_reported(transport, fake_client):
    run(fake_client.dispatch, note(1))
    fake_client.connected = False  # Telethon gave up reconnecting
    assert [type(u) for u in run(transport.poll_updates)] == [NewMessage]
    with pytest.raises(TransportError) as exc:
        run(transport.poll_updates)
    assert type(exc.value) is TransportError and "agents/Heidi" in str(exc.value)


def test_a_session_revoked_while_receiving_updates_is_an_auth_error(transport, fake_client):
    # Telethon's update loop keeps the error that stopped it and disconnects.
    fake_client._updates_error = errors.SessionRevokedError(request=None)
    fake_client.connected = False
    with pytest.raises(AuthError) as exc:
        run(transport.poll_updates)
    assert exc.value.reason == "SESSION_REVOKED"


def test_our_own_disconnect_is_not_reported_as_a_lost_connection(transport):
    run(transport.disconnect)
    assert run(transport.poll_updates) == []


def test_a_flood_wait_while_reconnecting_is_a_flood_wait_not_a_logout(logged_in, clock):
    client = FakeTelegramClient()
    client.get_me_error = errors.FloodWaitError(request=None, capture=40)
    transport = TelethonTransport(logged_in, gateway_id=GATEWAY, client_factory=lambda *a: client)
    with pytest.raises(FloodWait) as exc:
        run(transport.connect)
    assert exc.value.seconds == 40
    client.get_me_error = None
    clock.advance(39)
    with pytest.raises(FloodWait):  # no new connection before the time is up
        run(transport.connect)
    clock.advance(1)
    assert run(transport.connect).user_id == ME_ID


def test_telegram_failing_while_reconnecting_is_transient(logged_in):
    client = FakeTelegramClient()
    client.get_me_error = errors.RpcCallFailError(request=None)
    transport = TelethonTransport(logged_in, gateway_id=GATEWAY, client_factory=lambda *a: client)
    with pytest.raises(TransportError) as exc:
        run(transport.connect)
    assert type(exc.value) is TransportError


@pytest.fixture
def gateway(logged_in, clock):
    server = ChatServer()
    server.add_dm(user(ANN), range(1, 4), read_up_to=3)
    clients: list[FakeTelegramClient] = []

    def client_factory(session, api_id, api_hash):
        clients.append(FakeTelegramClient(session))
        clients[-1].server = server
        return clients[-1]

    harness = Harness(
        clock,
        gateway_id=GATEWAY,
        transport_factory=lambda agent, gateway_id: TelethonTransport(
            agent, gateway_id=gateway_id, client_factory=client_factory
        ),
    )
    harness.start()
    harness.server, harness.clients = server, clients
    return harness


def test_the_gateway_replaces_a_client_telethon_gave_up_on_and_fills_the_gap(gateway, logged_in, clock):
    supervised = gateway.gateway.clients[logged_in.pk]
    assert supervised.connected and len(gateway.clients) == 1
    gateway.clients[0].connected = False
    gateway.server.add_dm(user(ANN), range(1, 6), read_up_to=3)  # sent while the account was offline
    gateway.ingest()
    assert not supervised.connected and supervised.failures == 1
    clock.advance(2)
    gateway.step("connect")
    assert supervised.connected and len(gateway.clients) == 2 and gateway.clients[1].connected
    stored = Message.objects.filter(conversation__peer_id=ANN).values_list("message_id", flat=True)
    assert sorted(stored) == [1, 2, 3, 4, 5]
    assert list(TaskGraph.objects.values_list("target_message_id", flat=True)) == [5]


def test_the_ingest_step_polls_only_a_client_with_something_to_report(gateway, logged_in):
    transport = gateway.gateway.clients[logged_in.pk].transport
    polls = []
    poll = transport.poll_updates

    async def counted():
        polls.append(1)
        return await poll()

    transport.poll_updates = counted
    assert gateway.ingest() is False and polls == []  # idle: not polled
    run(gateway.clients[0].dispatch, note(4))
    assert gateway.ingest() is True and polls == [1]
    assert Message.objects.filter(conversation__peer_id=ANN, message_id=4).exists()


def test_a_session_revoked_in_the_update_loop_stops_the_agent_with_the_reason(gateway, logged_in):
    gateway.clients[0]._updates_error = errors.SessionRevokedError(request=None)
    gateway.clients[0].connected = False
    gateway.ingest()
    logged_in.refresh_from_db()
    assert logged_in.stopped and "SESSION_REVOKED" in logged_in.last_error
    assert logged_in.pk not in gateway.gateway.clients
    assert ActivityEvent.objects.filter(kind="agent_error", summary__contains="SESSION_REVOKED").exists()
