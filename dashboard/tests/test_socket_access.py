"""The socket's access checks after connect, and its origin check."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django_otp.plugins.otp_totp.models import TOTPDevice

from cindy_site.asgi import application
from conversations.services.activity import record_event
from dashboard.consumers import AUTH_RECHECK_SECONDS, CLOSE_NOT_ALLOWED
from dashboard.origin import origin_allowed
from dashboard.relay import dashboard_group
from dashboard.tests.sockets import RECEIVE_TIMEOUT, run_scenario

pytestmark = pytest.mark.django_db(transaction=True)


def _communicator(session_key: str, *, origin: str = "http://localhost", host: str = "localhost"):
    headers = [
        (b"host", host.encode()),
        (b"origin", origin.encode()),
        (b"cookie", f"sessionid={session_key}".encode()),
    ]
    return WebsocketCommunicator(application, "/ws/dashboard/", headers=headers)


async def _connected(session_key: str) -> WebsocketCommunicator:
    communicator = _communicator(session_key)
    connected, _ = await communicator.connect(timeout=RECEIVE_TIMEOUT)
    assert connected
    await communicator.send_json_to({"type": "hello", "last_event_id": 0})
    while (await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT))["type"] != "snapshot":
        pass
    return communicator


async def _until_closed(communicator: WebsocketCommunicator) -> tuple[int | None, list[dict[str, Any]]]:
    """The close code, and the messages the socket sent before closing."""
    sent = []
    while True:
        output = await communicator.receive_output(timeout=RECEIVE_TIMEOUT)
        if output["type"] == "websocket.close":
            return output.get("code"), sent
        sent.append(output)


def _hello_after(verified, change) -> int | None:
    async def scenario():
        communicator = await _connected(verified.session_key)
        await database_sync_to_async(change)()
        await communicator.send_json_to({"type": "hello", "last_event_id": 0})
        code, sent = await _until_closed(communicator)
        assert sent == []
        return code

    return run_scenario(scenario)


def test_logging_out_ends_the_socket_at_its_next_hello(verified, clock):
    assert _hello_after(verified, verified.client.logout) == CLOSE_NOT_ALLOWED


def test_losing_staff_status_ends_the_socket_at_its_next_hello(verified, staff, clock):
    def demote():
        get_user_model().objects.filter(pk=staff.pk).update(is_staff=False)

    assert _hello_after(verified, demote) == CLOSE_NOT_ALLOWED


def test_a_deactivated_user_loses_the_socket_at_its_next_hello(verified, staff, clock):
    def deactivate():
        get_user_model().objects.filter(pk=staff.pk).update(is_active=False)

    assert _hello_after(verified, deactivate) == CLOSE_NOT_ALLOWED


def test_deleting_the_otp_device_ends_the_socket_at_its_next_hello(verified, staff_device, clock):
    assert _hello_after(verified, staff_device.delete) == CLOSE_NOT_ALLOWED


def test_unconfirming_the_otp_device_ends_the_live_feed_within_the_recheck_interval(
    verified, staff_device, sandbox_agent, clock
):
    def unconfirm():
        TOTPDevice.objects.filter(pk=staff_device.pk).update(confirmed=False)

    async def scenario():
        communicator = await _connected(verified.session_key)
        await database_sync_to_async(unconfirm)()
        # Within the interval the socket trusts its last check: no query per relayed message.
        early = await database_sync_to_async(record_event)("info", agent_id=sandbox_agent.pk, summary="early")
        while True:
            message = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
            if message["type"] == "event":
                break
        clock.advance(AUTH_RECHECK_SECONDS)
        await database_sync_to_async(record_event)("info", agent_id=sandbox_agent.pk, summary="late")
        code, sent = await _until_closed(communicator)
        return early, message, code, sent

    early, delivered, code, sent = run_scenario(scenario)
    assert delivered["event"]["id"] == early.pk
    assert code == CLOSE_NOT_ALLOWED
    assert all(b"late" not in output.get("text", "").encode() for output in sent)


def test_an_idle_socket_is_closed_on_the_relays_recheck_tick(verified, staff_device, clock):
    async def scenario():
        communicator = await _connected(verified.session_key)
        await database_sync_to_async(staff_device.delete)()
        clock.advance(AUTH_RECHECK_SECONDS)
        await get_channel_layer().group_send(dashboard_group(), {"type": "relay.recheck"})
        code, _ = await _until_closed(communicator)
        return code

    assert run_scenario(scenario) == CLOSE_NOT_ALLOWED


def test_a_socket_whose_access_still_holds_keeps_running_after_a_recheck(verified, sandbox_agent, clock):
    async def scenario():
        communicator = await _connected(verified.session_key)
        clock.advance(AUTH_RECHECK_SECONDS)
        await get_channel_layer().group_send(dashboard_group(), {"type": "relay.recheck"})
        event = await database_sync_to_async(record_event)(
            "info", agent_id=sandbox_agent.pk, summary="still here"
        )
        while True:
            message = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
            if message["type"] == "event":
                break
        await communicator.disconnect()
        return event, message

    event, message = run_scenario(scenario)
    assert message["event"]["id"] == event.pk


# --- Origin -----------------------------------------------------------------------------------


def test_a_foreign_origin_is_refused_even_when_allowed_hosts_is_a_wildcard(verified, settings):
    settings.ALLOWED_HOSTS = ["*"]

    async def attempt():
        communicator = _communicator(verified.session_key, origin="https://evil.example")
        return await communicator.connect(timeout=RECEIVE_TIMEOUT)

    assert run_scenario(attempt) == (False, CLOSE_NOT_ALLOWED)


def test_a_csrf_trusted_origin_may_open_the_socket(verified, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://cindy.example.org"]

    async def attempt():
        communicator = _communicator(verified.session_key, origin="https://cindy.example.org")
        connected, _ = await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.disconnect()
        return connected

    assert run_scenario(attempt) is True


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        ("http://localhost:8000", "localhost:8000", True),
        ("http://LOCALHOST", "localhost", True),
        ("http://localhost:80", "localhost", True),  # the default port, spelled out
        ("http://localhost", "localhost:80", True),
        ("https://localhost", "localhost", False),  # an https page for this http site
        ("http://localhost:8001", "localhost:8000", False),
        ("http://localhost:99999", "localhost", False),
        ("https://evil.example", "localhost", False),
        ("", "localhost", False),
        ("null", "localhost", False),
        ("https://ops.example.com", "localhost", True),  # CSRF_TRUSTED_ORIGINS wildcard
        ("http://ops.example.com", "localhost", False),  # wrong scheme for that wildcard
        ("https://example.com.evil.example", "localhost", False),
        ("http://evil.example", "evil.example", False),  # a Host this site does not serve
    ],
)
def test_origin_must_be_the_site_itself_or_a_trusted_origin(settings, origin, host, allowed):
    settings.ALLOWED_HOSTS = ["localhost"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.com"]
    assert origin_allowed(origin=origin, host=host, secure=False) is allowed


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        ("https://cindy.example.org", "cindy.example.org", True),
        ("https://cindy.example.org:443", "cindy.example.org", True),
        ("http://cindy.example.org", "cindy.example.org", False),  # a plain-http page, e.g. injected
        ("http://cindy.example.org:443", "cindy.example.org", False),
        ("https://cindy.example.org:8443", "cindy.example.org", False),
    ],
)
def test_an_https_site_accepts_only_its_https_origin(settings, origin, host, allowed):
    settings.ALLOWED_HOSTS = ["cindy.example.org"]
    settings.CSRF_TRUSTED_ORIGINS = []
    assert origin_allowed(origin=origin, host=host, secure=True) is allowed


def test_an_exact_trusted_origin_needs_its_own_scheme(settings):
    settings.ALLOWED_HOSTS = ["localhost"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://cindy.example.org"]

    assert origin_allowed(origin="https://cindy.example.org", host="localhost", secure=False)
    assert not origin_allowed(origin="http://cindy.example.org", host="localhost", secure=False)


def _attempt(verified, *, origin: str, host: str, scheme: str = "ws", extra=()) -> bool:
    async def attempt():
        communicator = _communicator(verified.session_key, origin=origin, host=host)
        communicator.scope["scheme"] = scheme
        communicator.scope["headers"] = [*communicator.scope["headers"], *extra]
        connected, _ = await communicator.connect(timeout=RECEIVE_TIMEOUT)
        await communicator.disconnect()
        return connected

    return run_scenario(attempt)


def test_a_wss_socket_refuses_an_http_origin_of_the_same_host(verified, settings):
    settings.ALLOWED_HOSTS = ["cindy.example.org"]

    assert _attempt(verified, origin="https://cindy.example.org", host="cindy.example.org", scheme="wss")
    assert not _attempt(verified, origin="http://cindy.example.org", host="cindy.example.org", scheme="wss")
    assert not _attempt(verified, origin="https://cindy.example.org", host="cindy.example.org", scheme="ws")


def test_the_proxy_ssl_header_makes_the_site_https(verified, settings):
    settings.ALLOWED_HOSTS = ["cindy.example.org"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    forwarded = [(b"x-forwarded-proto", b"https")]

    assert _attempt(verified, origin="https://cindy.example.org", host="cindy.example.org", extra=forwarded)
    assert not _attempt(
        verified, origin="http://cindy.example.org", host="cindy.example.org", extra=forwarded
    )


@pytest.mark.parametrize(
    "message",
    [
        {"type": "gag", "conversation_id": 1, "gagged": True},
        {"type": "cancel", "conversation_id": 1},
        {"type": "translate", "conversation_id": 1, "language": "French"},
        {"type": "sandbox_send", "agent": 1, "text": "hi"},
    ],
    ids=lambda m: m["type"],
)
def test_the_socket_carries_no_state_changing_message(verified, sandbox_agent, message):
    """Changes go through the permission-checked views only: the socket answers anything but
    `hello` with an error and writes nothing."""
    from conversations.models import ActivityEvent, Conversation
    from sandbox.models import SandboxMessage

    def counts():
        return (ActivityEvent.objects.count(), SandboxMessage.objects.count(), Conversation.objects.count())

    async def scenario():
        communicator = await _connected(verified.session_key)
        before = await database_sync_to_async(counts)()
        await communicator.send_json_to(message)
        reply = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
        after = await database_sync_to_async(counts)()
        await communicator.disconnect()
        return reply, before, after

    reply, before, after = run_scenario(scenario)
    assert reply == {"type": "error", "error": 'expected {"type": "hello", ...}'}
    assert before == after
