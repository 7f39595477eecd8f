"""The Telethon session kept in the database: encrypted key, update state, entities, lease check."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest
from asgiref.sync import async_to_sync
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from telethon import utils
from telethon.crypto import AuthKey
from telethon.tl import types

from agents.models import AgentLease, TelegramEntity, TelegramSession, TelegramUpdateState
from agents.telethon_session import (
    ACCOUNT_DATE_REFRESH,
    DatabaseSession,
    SessionKeyError,
    SessionLeaseError,
    open_session_for,
    telegram_readiness_error,
)
from cindy_site import rows

from .conftest import AUTH_KEY, GATEWAY
from .doubles import DATE, channel, user


def test_round_trip_keeps_key_dc_update_state_and_entities(logged_in):
    session = open_session_for(logged_in, GATEWAY)
    session.set_update_state(0, types.updates.State(pts=100, qts=4, date=DATE, seq=7, unread_count=0))
    # Telethon stamps channel states with a naive datetime.
    session.set_update_state(
        901, types.updates.State(pts=55, qts=0, date=dt.datetime(2026, 1, 5), seq=0, unread_count=0)
    )
    session.process_entities(
        types.contacts.ResolvedPeer(None, [user(501, "Ann", "Ann")], [channel(901, "Chat", megagroup=True)])
    )
    session.save()

    again = DatabaseSession(logged_in, gateway_id=GATEWAY)
    assert again.auth_key.key == AUTH_KEY
    assert (again.dc_id, again.server_address, again.port) == (2, "149.154.167.51", 443)
    states = dict(again.get_update_states())
    assert (states[0].pts, states[0].qts, states[0].seq, states[0].date) == (100, 4, 7, DATE)
    assert states[901].pts == 55
    assert again.get_input_entity(501) == types.InputPeerUser(501, 501 * 3)
    assert again.get_input_entity("ann") == types.InputPeerUser(501, 501 * 3)
    chat_id = utils.get_peer_id(types.PeerChannel(901))
    assert again.get_input_entity(chat_id) == types.InputPeerChannel(901, 901 * 5)


def test_changed_entities_and_states_are_updated_not_duplicated(logged_in):
    session = open_session_for(logged_in, GATEWAY)
    session.process_entities(types.contacts.ResolvedPeer(None, [user(501, "Ann", "ann")], []))
    session.set_update_state(0, types.updates.State(pts=1, qts=0, date=DATE, seq=1, unread_count=0))
    session.flush()
    session.process_entities(types.contacts.ResolvedPeer(None, [user(501, "Ann", "annie")], []))
    session.set_update_state(0, types.updates.State(pts=2, qts=0, date=DATE, seq=2, unread_count=0))
    session.flush()
    assert list(TelegramEntity.objects.filter(agent=logged_in).values_list("username", flat=True)) == [
        "annie"
    ]
    assert list(TelegramUpdateState.objects.filter(agent=logged_in).values_list("pts", flat=True)) == [2]


def test_a_state_handed_over_again_unchanged_is_not_written_again(logged_in):
    """Telethon hands its update states to the session about once a minute per client, changed or
    not (a channel's stamped with the time of handing over): only a change makes a write."""
    session = open_session_for(logged_in, GATEWAY)
    session.set_update_state(0, types.updates.State(pts=5, qts=0, date=DATE, seq=3, unread_count=0))
    session.set_update_state(
        901, types.updates.State(pts=55, qts=0, date=dt.datetime(2026, 1, 5), seq=0, unread_count=0)
    )
    session.flush()
    assert not session.has_changes

    session.set_update_state(0, types.updates.State(pts=5, qts=0, date=DATE, seq=3, unread_count=0))
    session.set_update_state(
        901, types.updates.State(pts=55, qts=0, date=dt.datetime(2026, 1, 6), seq=0, unread_count=0)
    )
    assert not session.has_changes

    session.set_update_state(
        901, types.updates.State(pts=56, qts=0, date=dt.datetime(2026, 1, 6), seq=0, unread_count=0)
    )
    assert session.has_changes
    session.flush()
    states = dict(DatabaseSession(logged_in, gateway_id=GATEWAY).get_update_states())
    assert (states[0].date, states[901].pts) == (DATE, 56)

    # A state read back from the store is the stored one: handing it over again writes nothing.
    again = DatabaseSession(logged_in, gateway_id=GATEWAY)
    again.set_update_state(0, types.updates.State(pts=5, qts=0, date=DATE, seq=3, unread_count=0))
    assert not again.has_changes


def test_the_accounts_date_alone_is_written_once_it_is_an_hour_behind_or_with_a_counter(logged_in):
    """Telethon moves the account's update date with every update container it applies (a contact's
    status among them): a new date with the same counters is written only once the stored date is
    ACCOUNT_DATE_REFRESH behind, or with the next change of a counter."""
    session = open_session_for(logged_in, GATEWAY)
    session.set_update_state(0, types.updates.State(pts=5, qts=0, date=DATE, seq=3, unread_count=0))
    session.flush()

    def hand_over(pts: int, date: dt.datetime) -> None:
        session.set_update_state(0, types.updates.State(pts=pts, qts=0, date=date, seq=3, unread_count=0))

    hand_over(5, DATE + dt.timedelta(minutes=1))
    hand_over(5, DATE + ACCOUNT_DATE_REFRESH - dt.timedelta(seconds=1))
    assert not session.has_changes

    hand_over(5, DATE + ACCOUNT_DATE_REFRESH)
    assert session.has_changes
    session.flush()
    stored = TelegramUpdateState.objects.get(agent=logged_in, entity_id=0)
    assert (stored.pts, stored.date) == (5, DATE + ACCOUNT_DATE_REFRESH)

    later = DATE + ACCOUNT_DATE_REFRESH + dt.timedelta(minutes=2)
    hand_over(5, later)
    assert not session.has_changes
    hand_over(6, later)  # a counter moved: the state is written whole, with its date
    assert session.has_changes
    session.flush()
    stored = TelegramUpdateState.objects.get(agent=logged_in, entity_id=0)
    assert (stored.pts, stored.date) == (6, later)


def test_a_changed_state_is_written_in_two_plain_statements_the_lease_read_and_one_upsert(logged_in):
    """Every connected account flushes its state after connecting and then about once a minute while
    it has traffic: the lease read and the upsert, no transaction around one statement."""
    session = open_session_for(logged_in, GATEWAY)
    session.set_update_state(0, types.updates.State(pts=5, qts=0, date=DATE, seq=3, unread_count=0))
    session.flush()
    session.set_update_state(0, types.updates.State(pts=6, qts=0, date=DATE, seq=4, unread_count=0))
    with CaptureQueriesContext(connection) as queries:
        session.flush()
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 2, statements
    assert statements[0].startswith("SELECT 1 FROM") and "agentlease" in statements[0]
    assert statements[1].startswith("INSERT INTO") and "telegramupdatestate" in statements[1]
    state = TelegramUpdateState.objects.get(agent=logged_in, entity_id=0)
    assert (state.pts, state.seq, state.date) == (6, 4, DATE)


def test_a_flush_that_fails_part_way_writes_nothing_and_keeps_every_change(logged_in, monkeypatch):
    session = open_session_for(logged_in, GATEWAY)
    session.set_update_state(0, types.updates.State(pts=7, qts=0, date=DATE, seq=1, unread_count=0))
    session.process_entities(types.contacts.ResolvedPeer(None, [user(502, "Bo", "bo")], []))
    real = rows.upsert

    def failing(model, values, **kwargs):
        if model is TelegramEntity:
            raise DatabaseError("disk full")
        return real(model, values, **kwargs)

    monkeypatch.setattr(rows, "upsert", failing)
    with pytest.raises(DatabaseError):
        session.flush()
    assert not TelegramUpdateState.objects.filter(agent=logged_in, entity_id=0, pts=7).exists()
    assert session.has_changes
    monkeypatch.setattr(rows, "upsert", real)
    session.flush()
    assert TelegramUpdateState.objects.get(agent=logged_in, entity_id=0).pts == 7
    assert TelegramEntity.objects.filter(agent=logged_in, entity_id=502, username="bo").exists()


def test_auth_key_is_encrypted_at_rest_and_never_shown(logged_in):
    raw = bytes(TelegramSession.objects.get(agent=logged_in).auth_key_encrypted)
    assert AUTH_KEY not in raw and AUTH_KEY[:32] not in raw
    session = open_session_for(logged_in, GATEWAY)
    assert AUTH_KEY.hex()[:16] not in repr(session)
    assert "Heidi" in repr(session)


def test_save_from_the_event_loop_writes_through_sync_to_async(logged_in):
    session = open_session_for(logged_in, GATEWAY)

    async def telethon_like():
        session.set_update_state(0, types.updates.State(pts=9, qts=0, date=DATE, seq=1, unread_count=0))
        pending = session.save()
        assert asyncio.iscoroutine(pending)  # Telethon awaits it through utils.maybe_async
        await pending

    async_to_sync(telethon_like)()
    assert TelegramUpdateState.objects.get(agent=logged_in, entity_id=0).pts == 9


def test_missing_session_key_is_a_clear_error(logged_in, settings):
    settings.CINDY_SESSION_KEY = ""
    with pytest.raises(SessionKeyError) as exc:
        open_session_for(logged_in, GATEWAY)
    assert "CINDY_SESSION_KEY is not set" in str(exc.value)


def test_a_different_session_key_cannot_read_the_key(logged_in, settings):
    settings.CINDY_SESSION_KEY = "another-key"
    with pytest.raises(SessionKeyError) as exc:
        open_session_for(logged_in, GATEWAY)
    assert "agents/Heidi" in str(exc.value) and "telegram_login Heidi" in str(exc.value)


def test_only_the_lease_holder_may_open_the_session(logged_in, clock):
    with pytest.raises(SessionLeaseError) as other:
        open_session_for(logged_in, "gw-other:2")
    assert GATEWAY in str(other.value)
    clock.advance(61)
    with pytest.raises(SessionLeaseError) as expired:
        open_session_for(logged_in, GATEWAY)
    assert "expired" in str(expired.value)
    AgentLease.objects.filter(agent=logged_in).delete()
    with pytest.raises(SessionLeaseError):
        open_session_for(logged_in, GATEWAY)


def test_a_gateway_that_lost_its_lease_does_not_overwrite_the_session(logged_in):
    session = open_session_for(logged_in, GATEWAY)
    AgentLease.objects.filter(agent=logged_in).update(holder="gw-other:2")
    session.auth_key = AuthKey(data=bytes(256))
    session.flush()
    AgentLease.objects.filter(agent=logged_in).update(holder=GATEWAY)
    assert open_session_for(logged_in, GATEWAY).auth_key.key == AUTH_KEY


def test_log_out_deletes_everything(logged_in):
    session = open_session_for(logged_in, GATEWAY)
    session.set_update_state(0, types.updates.State(pts=1, qts=0, date=DATE, seq=1, unread_count=0))
    session.flush()
    session.delete()
    assert not TelegramSession.objects.filter(agent=logged_in).exists()
    assert not TelegramUpdateState.objects.filter(agent=logged_in).exists()


def test_readiness_names_what_is_missing_and_the_fix(tg_agent, settings):
    assert telegram_readiness_error(tg_agent) == (
        "agents/Heidi: not logged in to Telegram: run python manage.py telegram_login Heidi, "
        "or use Telegram sign-in on its admin page"
    )
    settings.TELEGRAM_API_HASH = ""
    assert "TELEGRAM_API_HASH is not set" in telegram_readiness_error(tg_agent)
    assert "my.telegram.org" in telegram_readiness_error(tg_agent)


def test_logged_in_agent_is_ready(logged_in):
    assert telegram_readiness_error(logged_in) is None


def test_telethon_saves_its_update_state_into_the_store_and_a_restart_reads_it_back(logged_in):
    """Real TelegramClient code paths (no network): what catch-up on the next start depends on."""
    from telethon._updates import ChannelState, SessionState

    from telegram.client import default_client_factory

    session = open_session_for(logged_in, GATEWAY)

    async def first_run():
        client = default_client_factory(session, "12345", "hash")
        assert client._catch_up is True
        client._message_box.load(
            SessionState(0, 0, False, pts=500, qts=6, date=int(DATE.timestamp()), seq=40, takeout_id=None),
            [ChannelState(channel_id=901, pts=77)],
        )
        await client._save_states_and_entities()  # what Telethon runs every minute and on disconnect
        await utils.maybe_async(client.session.save())

    async_to_sync(first_run)()

    restarted = open_session_for(logged_in, GATEWAY)
    states = dict(restarted.get_update_states())
    assert (states[0].pts, states[0].qts, states[0].seq, states[0].date) == (500, 6, 40, DATE)
    assert states[901].pts == 77
