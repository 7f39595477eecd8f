"""An imported session connects to the loopback MTProto stand-in without a new login."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from asgiref.sync import async_to_sync
from telethon import TelegramClient
from telethon.sessions import SQLiteSession

from agents.models import Agent
from cwimport.services import cw_state_import
from cwimport.tests.test_import_sessions import open_with_lease

mtproto = pytest.importorskip(
    "cindy_site.testing.mtproto",
    reason="the loopback MTProto stand-in (cindy_site/testing/mtproto) is absent",
)

pytestmark = pytest.mark.django_db
PHONE = "+9996671234"  # the stand-in's code for it: 77777


@pytest.fixture
def standin():
    server = mtproto.StandIn().start()
    mtproto.register_public_key(server.key.public_pem)
    yield server
    server.stop()


def sign_in_like_the_original(server, path) -> None:
    """What the original leaves behind: a Telethon SQLite session, signed in, then the process stopped."""

    async def run() -> None:
        session = SQLiteSession(str(path))
        session.set_dc(2, "127.0.0.1", server.port)
        client = TelegramClient(session, 1, "test", receive_updates=False, flood_sleep_threshold=0)
        await client.connect()
        await client.send_code_request(PHONE)
        await client.sign_in(phone=PHONE, code="77777")
        await client.get_me()
        await client.disconnect()

    asyncio.run(run())
    past = time.time() - 3600
    os.utime(path, (past, past))


def test_the_imported_session_connects_without_logging_in(standin, state_dir, clock):
    heidi = standin.run(standin.world.create_user, phone=PHONE, first_name="Heidi", username="heidi")
    (state_dir / "Heidi").mkdir()
    sign_in_like_the_original(standin, state_dir / "Heidi" / "telegram.session")
    agent = Agent.objects.create(
        name="Heidi", config_name="Heidi", phone=PHONE, instructions="x", transport="telegram"
    )
    report = cw_state_import(mysql_url=None, state_dir=state_dir, agent_names=[])
    assert report.sessions[0].startswith("Heidi: created")
    agent.refresh_from_db()
    assert agent.telegram_user_id == heidi.id
    sign_ins = len(standin.calls_of("auth.signIn"))

    session = open_with_lease(agent, clock)

    async def connect():
        client = TelegramClient(session, 1, "test", receive_updates=False, flood_sleep_threshold=0)
        await client.connect()
        try:
            return await client.is_user_authorized(), await client.get_me()
        finally:
            await client.disconnect()

    authorized, me = async_to_sync(connect)()
    assert authorized and me.id == heidi.id and me.username == "heidi"
    assert len(standin.calls_of("auth.signIn")) == sign_ins  # no new login
