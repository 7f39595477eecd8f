from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import async_to_sync
from telethon.crypto import AuthKey

from agents.models import Agent, AgentLease, Transport
from agents.telethon_session import DatabaseSession
from telegram import TelethonTransport

from .doubles import FakeTelegramClient

GATEWAY = "gw-test:1"
AUTH_KEY = bytes(range(256))


@pytest.fixture
def telegram_settings(settings, tmp_path):
    settings.TELEGRAM_API_ID = "12345"
    settings.TELEGRAM_API_HASH = "0123456789abcdef0123456789abcdef"
    settings.CINDY_SESSION_KEY = "test-session-key-not-for-production"
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings


@pytest.fixture
def tg_agent(db, clock, telegram_settings):
    agent = Agent.objects.create(
        name="Heidi", phone="+15550001", instructions="Be kind.", transport=Transport.TELEGRAM
    )
    now = clock.now()
    AgentLease.objects.create(
        agent=agent,
        holder=GATEWAY,
        acquired_at=now,
        heartbeat_at=now,
        expires_at=now + dt.timedelta(seconds=60),
    )
    return agent


@pytest.fixture
def logged_in(tg_agent):
    session = DatabaseSession(tg_agent, gateway_id=GATEWAY)
    session.set_dc(2, "149.154.167.51", 443)
    session.auth_key = AuthKey(data=AUTH_KEY)
    session.flush()
    tg_agent.telegram_user_id = 7000001
    tg_agent.save(update_fields=["telegram_user_id"])
    return tg_agent


@pytest.fixture
def fake_client():
    return FakeTelegramClient()


@pytest.fixture
def transport(logged_in, fake_client):
    def factory(session, api_id, api_hash):
        fake_client.session = session
        return fake_client

    t = TelethonTransport(logged_in, gateway_id=GATEWAY, client_factory=factory)
    async_to_sync(t.connect)()
    return t


def run(coro_fn, *args, **kwargs):
    """Run a transport coroutine the way the gateway's sync_to_async calls expect."""
    return async_to_sync(coro_fn)(*args, **kwargs)
