"""import_cw_state on the original's Telethon session files: the encrypted store gives back the same
auth key, DC, entities and update state; a session still in use is refused."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from telethon.crypto import AuthKey

from agents.models import Agent, AgentLease, TelegramEntity, TelegramSession
from agents.telethon_session import DatabaseSession, telegram_readiness_problems
from cwimport.services import cw_state_import
from cwimport.tests.sessions import AUTH_KEY, UPDATE_DATE, write_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def heidi(db) -> Agent:
    return Agent.objects.create(
        name="Heidi", config_name="Heidi", phone="+1 555 000 0002", instructions="x", transport="telegram"
    )


def run(state_dir, **kwargs):
    return cw_state_import(mysql_url=None, state_dir=state_dir, agent_names=[], **kwargs)


def open_with_lease(agent: Agent, clock) -> DatabaseSession:
    now = clock.now()
    AgentLease.objects.create(
        agent=agent,
        holder="gw-test",
        acquired_at=now,
        heartbeat_at=now,
        expires_at=now + dt.timedelta(minutes=1),
    )
    return DatabaseSession(agent, gateway_id="gw-test")


def test_the_stored_session_gives_back_key_dc_entities_and_update_state(heidi, state_dir, clock, settings):
    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "12345", "abc"
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    report = run(state_dir)
    assert report.sessions[0].startswith("Heidi: created from ")
    assert "DC 4, 3 entities, 2 update states" in report.sessions[0]
    assert bytes(TelegramSession.objects.get(agent=heidi).auth_key_encrypted) != AUTH_KEY  # encrypted at rest

    session = open_with_lease(heidi, clock)
    assert session.auth_key.key == AUTH_KEY
    assert (session.dc_id, session.server_address, session.port) == (4, "149.154.167.91", 443)
    assert session.get_entity_rows_by_id(1002) == (1002, 111)
    assert session.get_entity_rows_by_username("zoe") == (555, -222)
    assert session.get_entity_rows_by_phone("15550000002") == (1002, 111)
    assert session.get_entity_rows_by_id(-1000000000777) == (-1000000000777, 333)
    assert TelegramEntity.objects.get(agent=heidi, entity_id=555).name == "Zoë Ünal"
    state = session.get_update_state(0)
    assert (state.pts, state.qts, state.seq, state.date) == (4100, 7, 12, UPDATE_DATE)
    assert session.get_update_state(777).pts == 88
    heidi.refresh_from_db()
    assert heidi.telegram_user_id == 1002  # found by phone in the session: runagents needs no new login
    assert telegram_readiness_problems(heidi) == []


def test_a_second_session_import_changes_nothing(heidi, state_dir):
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    run(state_dir)
    stored = bytes(TelegramSession.objects.get().auth_key_encrypted)
    again = run(state_dir)
    assert again.sessions[0].startswith("Heidi: unchanged")
    assert bytes(TelegramSession.objects.get().auth_key_encrypted) == stored


def test_dry_run_reports_the_session_and_writes_nothing(heidi, state_dir):
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    report = run(state_dir, dry_run=True)
    assert report.sessions[0].startswith("Heidi: created")
    assert not TelegramSession.objects.exists() and not TelegramEntity.objects.exists()
    heidi.refresh_from_db()
    assert heidi.telegram_user_id is None


def test_a_recently_written_session_is_refused(heidi, state_dir):
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002", age_seconds=5)
    report = run(state_dir)
    assert "Heidi: REFUSED" in report.sessions[0] and "stop the original first" in report.sessions[0]
    assert not TelegramSession.objects.exists()


def test_a_session_another_process_holds_open_is_refused(heidi, state_dir):
    path = write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; f = open({str(path)!r}, 'rb'); print('open', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        report = run(state_dir)
    finally:
        holder.stdin.close()
        holder.wait()
    assert f"open in process {holder.pid}" in report.sessions[0]
    assert not TelegramSession.objects.exists()


def test_a_different_login_in_cindy_is_kept(heidi, state_dir, clock):
    session = open_with_lease(heidi, clock)
    session.set_dc(2, "149.154.167.50", 443)
    session.auth_key = AuthKey(data=b"\x01" * 256)
    session.flush()
    AgentLease.objects.all().delete()
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    report = run(state_dir)
    assert "KEPT Cindy's own login" in report.sessions[0]
    assert TelegramSession.objects.get().dc_id == 2


def test_a_running_gateway_blocks_the_session_import(heidi, state_dir, clock):
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    open_with_lease(heidi, clock)
    report = run(state_dir)
    assert "REFUSED gateway gw-test runs this agent now" in report.sessions[0]


def test_a_missing_or_broken_session_file_is_reported(heidi, state_dir, db):
    Agent.objects.create(name="Wendy", config_name="Wendy", phone="+15550000001", instructions="x")
    (state_dir / "Heidi").mkdir()
    (state_dir / "Heidi" / "telegram.session").write_bytes(b"not sqlite at all")
    lines = run(state_dir).sessions
    assert lines[0].startswith("Heidi: ERROR") and "telegram.session" in lines[0]
    assert lines[1].startswith("Wendy: no session file at ")


def test_entities_are_the_telethon_rows(heidi, state_dir):
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002")
    run(state_dir)
    rows = set(TelegramEntity.objects.values_list("entity_id", "access_hash", "username", "phone", "name"))
    assert rows == {
        (1002, 111, "heidi_bot", "15550000002", "Heidi"),
        (555, -222, "zoe", None, "Zoë Ünal"),
        (-1000000000777, 333, None, None, "Bücherclub 📚"),  # Telethon's marked channel id
    }


def test_the_command_prints_the_report_and_fails_when_a_session_is_refused(heidi, state_dir, capsys):
    write_session(state_dir, "Heidi", self_id=1002, phone="15550000002", age_seconds=5)
    with pytest.raises(CommandError, match=r"1 session\(s\) not imported"):
        call_command("import_cw_state", "--state-dir", str(state_dir))
    assert "Heidi: REFUSED" in capsys.readouterr().out


def test_the_command_needs_a_source(db):
    with pytest.raises(CommandError, match="give --mysql URL, --state-dir PATH, or both"):
        call_command("import_cw_state")
    with pytest.raises(CommandError, match="not a directory"):
        call_command("import_cw_state", "--state-dir", "/nonexistent/state")
    with pytest.raises(CommandError, match="expected mysql://USER:PASS@HOST/DB"):
        call_command("import_cw_state", "--mysql", "postgres://x@y/z")
