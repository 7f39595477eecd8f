"""telegram_login driven with a client double: no network, real Telethon errors."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import CommandError, call_command
from telethon import errors
from telethon.crypto import AuthKey
from telethon.tl import types

from agents.management.commands import telegram_login
from agents.models import Agent, AgentLease, TelegramSession, Transport

AUTH_KEY = bytes(range(256))


class LoginClient:
    """The TelegramClient calls telegram_login makes."""

    def __init__(self, session, *, sign_in_errors=(), code_error=None, password_error=None):
        self.session = session
        self.sign_in_errors = list(sign_in_errors)
        self.code_error = code_error
        self.password_error = password_error
        self.calls: list[tuple] = []
        self.lease_holder_during_login = None

    async def connect(self):
        self.calls.append(("connect",))

    async def disconnect(self):
        self.calls.append(("disconnect",))

    async def is_user_authorized(self):
        return False

    async def send_code_request(self, phone):
        self.calls.append(("send_code_request", phone))
        if self.code_error:
            raise self.code_error

    async def sign_in(self, phone=None, code=None, *, password=None):
        self.calls.append(("sign_in", phone, code, password))
        if password is not None and self.password_error:
            raise self.password_error
        if self.sign_in_errors:
            raise self.sign_in_errors.pop(0)
        self.session.auth_key = AuthKey(data=AUTH_KEY)
        self.session.set_dc(2, "149.154.167.51", 443)

    async def get_me(self):
        return types.User(id=4242, is_self=True, access_hash=1, first_name="Heidi", username="heidi_tg")


@pytest.fixture
def login_env(db, clock, settings, monkeypatch):
    settings.TELEGRAM_API_ID = "12345"
    settings.TELEGRAM_API_HASH = "0123456789abcdef0123456789abcdef"
    settings.CINDY_SESSION_KEY = "test-session-key"
    agent = Agent.objects.create(
        name="Heidi", phone="+15550001", instructions="x", transport=Transport.TELEGRAM
    )
    answers = {"code": "12345", "password": "hunter2"}
    asked = []

    def ask(prompt, *, secret=False):
        asked.append((prompt, secret))
        return answers["password" if secret else "code"]

    monkeypatch.setattr(telegram_login, "ask", ask)
    env = {"agent": agent, "answers": answers, "asked": asked, "clients": [], "client_kwargs": {}}

    def make_client(session, api_id, api_hash):
        client = LoginClient(session, **env["client_kwargs"])
        env["clients"].append(client)
        return client

    monkeypatch.setattr(telegram_login, "make_client", make_client)
    return env


def test_login_stores_the_encrypted_session_and_the_user_id(login_env, capsys):
    call_command("telegram_login", "Heidi")
    agent = Agent.objects.get(name="Heidi")
    assert (agent.telegram_user_id, agent.telegram_username) == (4242, "heidi_tg")
    row = TelegramSession.objects.get(agent=agent)
    assert row.auth_key_encrypted and AUTH_KEY not in bytes(row.auth_key_encrypted)
    (client,) = login_env["clients"]
    assert ("sign_in", "+15550001", "12345", None) in client.calls
    assert client.calls[-1] == ("disconnect",)
    assert not AgentLease.objects.filter(agent=agent).exists()  # released afterwards
    assert "logged in as @heidi_tg (user id 4242)" in capsys.readouterr().out


def test_a_fresh_login_restarts_an_agent_stopped_for_its_session(login_env):
    Agent.objects.filter(name="Heidi").update(
        stopped=True,
        last_error="agents/Heidi: not logged in to Telegram: run python manage.py telegram_login Heidi",
    )
    call_command("telegram_login", "Heidi")
    agent = Agent.objects.get(name="Heidi")
    assert not agent.stopped and agent.last_error == ""


def test_two_step_password_is_asked_when_needed(login_env):
    login_env["client_kwargs"] = {"sign_in_errors": [errors.SessionPasswordNeededError(request=None)]}
    call_command("telegram_login", "Heidi")
    (client,) = login_env["clients"]
    assert ("sign_in", None, None, "hunter2") in client.calls
    assert login_env["asked"][-1][1] is True  # the password prompt does not echo


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sign_in_errors": [errors.PhoneCodeInvalidError(request=None)]}, "the code '12345' is wrong"),
        ({"sign_in_errors": [errors.PhoneCodeExpiredError(request=None)]}, "the code has expired"),
        ({"code_error": errors.PhoneNumberBannedError(request=None)}, "banned the phone number +15550001"),
        (
            {
                "sign_in_errors": [errors.SessionPasswordNeededError(request=None)],
                "password_error": errors.PasswordHashInvalidError(request=None),
            },
            "two-step verification password is wrong",
        ),
    ],
)
def test_login_errors_are_named(login_env, kwargs, message):
    login_env["client_kwargs"] = kwargs
    with pytest.raises(CommandError) as exc:
        call_command("telegram_login", "Heidi")
    assert "agents/Heidi" in str(exc.value) and message in str(exc.value)
    assert not TelegramSession.objects.filter(
        agent=login_env["agent"], auth_key_encrypted__isnull=False
    ).exists()


@pytest.mark.parametrize("missing", ["TELEGRAM_API_ID", "TELEGRAM_API_HASH"])
def test_missing_api_credentials(login_env, settings, missing):
    setattr(settings, missing, "")
    with pytest.raises(CommandError) as exc:
        call_command("telegram_login", "Heidi")
    assert f"{missing} not set" in str(exc.value) and "my.telegram.org" in str(exc.value)
    assert login_env["clients"] == []


def test_missing_session_key(login_env, settings):
    settings.CINDY_SESSION_KEY = ""
    with pytest.raises(CommandError, match="CINDY_SESSION_KEY is not set"):
        call_command("telegram_login", "Heidi")


def test_refused_while_a_gateway_holds_the_lease(login_env, clock):
    now = clock.now()
    AgentLease.objects.create(
        agent=login_env["agent"],
        holder="gw-a:1",
        acquired_at=now,
        heartbeat_at=now,
        expires_at=now + dt.timedelta(seconds=30),
    )
    with pytest.raises(CommandError) as exc:
        call_command("telegram_login", "Heidi")
    assert "gateway gw-a:1 is running this agent" in str(exc.value)
    assert login_env["clients"] == []
    assert AgentLease.objects.get(agent=login_env["agent"]).holder == "gw-a:1"


def test_an_expired_lease_is_taken_over(login_env, clock):
    now = clock.now()
    AgentLease.objects.create(
        agent=login_env["agent"],
        holder="gw-dead:1",
        acquired_at=now,
        heartbeat_at=now,
        expires_at=now - dt.timedelta(seconds=1),
    )
    call_command("telegram_login", "Heidi")
    assert Agent.objects.get(name="Heidi").telegram_user_id == 4242


def test_all_logs_in_every_enabled_telegram_agent(login_env):
    Agent.objects.create(name="Olga", phone="+15550002", instructions="x", transport=Transport.TELEGRAM)
    Agent.objects.create(
        name="Off", phone="+15550003", instructions="x", transport=Transport.TELEGRAM, disabled=True
    )
    Agent.objects.create(name="Sandy", phone="", instructions="x", transport=Transport.SANDBOX)
    call_command("telegram_login", "--all")
    phones = [c.calls[1][1] for c in login_env["clients"]]
    assert phones == ["+15550001", "+15550002"]


def test_unknown_agent_name(login_env):
    with pytest.raises(CommandError, match="No agent named Nobody"):
        call_command("telegram_login", "Nobody")
