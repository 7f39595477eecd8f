"""Telegram sign-in from the web: the admin's requests, run by the gateway's sign-in step with a login
client double at the network edge (real TL results, real `telethon.errors`)."""

from __future__ import annotations

import datetime as dt

import pytest
from telethon import errors
from telethon.crypto import AuthKey
from telethon.tl import functions, types

from agents.models import Agent, AgentLease, GatewayRequest, TelegramSession, Transport
from agents.services import telegram_requests as services
from conversations.models import ActivityEvent
from engine import requests, signin
from engine.tests.harness import Harness

pytestmark = pytest.mark.django_db
Status = GatewayRequest.Status
AUTH_KEY = bytes(range(256))
CODE, PASSWORD = "24680", "correct horse"


class LoginClient:
    """The TelegramClient calls a sign-in makes, answered as Telegram would."""

    def __init__(self, session, account: dict) -> None:
        self.session, self.account = session, account

    async def connect(self):
        if self.session.auth_key is None:  # a first connection creates the auth key
            self.session.auth_key = AuthKey(data=AUTH_KEY)
            self.session.set_dc(2, "149.154.167.51", 443)

    async def disconnect(self):
        self.account["disconnects"] += 1

    async def is_user_authorized(self):
        return self.account["signed_in"]

    async def send_code_request(self, phone):
        self.account["codes_sent_to"].append(phone)
        return types.auth.SentCode(type=types.auth.SentCodeTypeApp(length=5), phone_code_hash="hash-1")

    async def sign_in(self, phone=None, code=None, *, password=None, phone_code_hash=None):
        if password is not None:
            if password != PASSWORD:
                raise errors.PasswordHashInvalidError(request=None)
        else:
            assert phone_code_hash == "hash-1", "the hash of the code request must come back"
            if code != CODE:
                raise errors.PhoneCodeInvalidError(request=None)
            if self.account["two_step"]:
                raise errors.SessionPasswordNeededError(request=None)
        self.account["signed_in"] = True
        return await self.get_me()

    async def get_me(self):
        if not self.account["signed_in"]:
            return None
        return types.User(id=4242, is_self=True, access_hash=1, first_name="Heidi", username="heidi_tg")

    async def __call__(self, request):
        assert isinstance(request, functions.account.GetPasswordRequest)
        return types.account.Password(
            new_algo=types.PasswordKdfAlgoUnknown(),
            new_secure_algo=types.SecurePasswordKdfAlgoUnknown(),
            secure_random=b"",
            has_password=True,
            hint="the usual",
        )


@pytest.fixture
def account(monkeypatch, settings):
    settings.TELEGRAM_API_ID = "12345"
    settings.TELEGRAM_API_HASH = "0123456789abcdef0123456789abcdef"
    settings.CINDY_SESSION_KEY = "test-session-key"
    state = {"signed_in": False, "two_step": False, "codes_sent_to": [], "disconnects": 0}
    monkeypatch.setattr(signin, "make_login_client", lambda session: LoginClient(session, state))
    return state


@pytest.fixture
def heidi(db):
    return Agent.objects.create(
        name="Heidi",
        phone="+15550001",
        instructions="x",
        transport=Transport.TELEGRAM,
        stopped=True,
        last_error="agents/Heidi: not logged in to Telegram",
    )


@pytest.fixture
def gateway(clock):
    return Harness(clock, gateway_id="gw-signin")


def step(gateway: Harness, request: GatewayRequest) -> GatewayRequest:
    gateway.step("signin")
    request.refresh_from_db()
    return request


def test_a_code_signs_the_account_in_and_the_gateway_may_run_it(heidi, account, gateway):
    started = step(gateway, services.signin_start(agent=heidi))
    assert started.status == Status.DONE, started.error
    assert started.result == {"state": "code_sent", "phone_code_hash": "hash-1", "via": "App"}
    assert account["codes_sent_to"] == ["+15550001"]
    assert TelegramSession.objects.get(agent=heidi).auth_key_encrypted is not None  # the key the code is for

    finished = step(gateway, services.signin_submit_code(agent=heidi, code="24 680"))
    assert finished.status == Status.DONE, finished.error
    assert finished.result["state"] == "signed_in"
    assert finished.params == {"code": "", "phone_code_hash": "hash-1"}  # the code is gone
    heidi.refresh_from_db()
    assert (heidi.telegram_user_id, heidi.telegram_username, heidi.stopped) == (4242, "heidi_tg", False)
    assert not AgentLease.objects.filter(agent=heidi).exists()  # released for the gateway to take
    assert account["disconnects"] == 2
    summaries = list(ActivityEvent.objects.filter(agent=heidi).values_list("summary", flat=True))
    assert "Telegram sign-in: signed in" in summaries
    assert not any(CODE in s for s in summaries)


def test_a_pass_with_no_sign_in_pending_reads_only_the_pending_requests(heidi, django_assert_num_queries):
    held = list(range(10_000, 11_000))  # a gateway holding a thousand other agents
    with django_assert_num_queries(1) as read:
        assert signin.signin_pending_agents(names=[], held=held) == []
    assert "agents_agent" not in read.captured_queries[0]["sql"]  # not the join over the agents
    services.signin_start(agent=heidi)
    assert signin.signin_pending_agents(names=[], held=held) == [heidi]
    assert signin.signin_pending_agents(names=[], held=[]) == [heidi]
    # Held by this gateway: it answers its own agent's request.
    assert signin.signin_pending_agents(names=[], held=[*held, heidi.pk]) == []
    assert signin.signin_pending_agents(names=["Someone"], held=[]) == []


def test_two_step_verification_asks_for_the_password(heidi, account, gateway):
    account["two_step"] = True
    step(gateway, services.signin_start(agent=heidi))
    asked = step(gateway, services.signin_submit_code(agent=heidi, code=CODE))
    assert asked.result == {"state": "password_needed", "hint": "the usual"}

    wrong = step(gateway, services.signin_submit_password(agent=heidi, password="wrong"))
    assert wrong.status == Status.FAILED
    assert wrong.error == "the two-step verification password is wrong: try again"
    assert wrong.params == {"password": ""}
    assert services.signin_latest(agent=heidi).result["state"] == "password_needed"  # the flow stands

    right = step(gateway, services.signin_submit_password(agent=heidi, password=PASSWORD))
    assert right.result["state"] == "signed_in", right.error
    assert right.params == {"password": ""}
    events = ActivityEvent.objects.filter(agent=heidi).values_list("summary", flat=True)
    assert not any(PASSWORD in s or "wrong" == s for s in events)


def test_a_wrong_code_fails_with_what_to_do(heidi, account, gateway):
    step(gateway, services.signin_start(agent=heidi))
    failed = step(gateway, services.signin_submit_code(agent=heidi, code="11111"))
    assert failed.status == Status.FAILED
    assert failed.error.startswith("the code is wrong: type the code Telegram sent")
    event = ActivityEvent.objects.get(agent=heidi, kind=ActivityEvent.Kind.AGENT_ERROR)
    assert "request failed: the code is wrong" in event.summary


def test_a_gateway_holding_the_agent_answers_that_it_is_signed_in(heidi, account, clock):
    now = clock.now()
    AgentLease.objects.create(
        agent=heidi,
        holder="other-gw",
        acquired_at=now,
        heartbeat_at=now,
        expires_at=now + dt.timedelta(seconds=60),
    )
    request = services.signin_start(agent=heidi)
    gateway = Harness(clock, gateway_id="gw-signin")
    gateway.step("signin")
    request.refresh_from_db()
    assert request.status == Status.PENDING  # another process holds the account: not touched here
    assert account["codes_sent_to"] == []


def test_a_sandbox_agent_cannot_be_signed_in(agent):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="runs on the sandbox"):
        services.signin_start(agent=agent)


def test_a_code_before_any_was_sent_is_refused(heidi):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="no code has been sent yet"):
        services.signin_submit_code(agent=heidi, code="12345")


def test_a_password_claimed_by_a_gateway_that_died_is_failed_and_blanked_by_any_gateway(
    heidi, account, clock
):
    """A gateway took the password step and died: the agent is held by nobody, so no gateway holds
    the request either. Another gateway fails it once its claim expired, and the password is gone."""
    step(Harness(clock, gateway_id="gw-first"), services.signin_start(agent=heidi))
    request = services.signin_submit_password(agent=heidi, password=PASSWORD)
    (claimed,) = requests.requests_claim(agent_id=heidi.pk, holder="gw-dead:1:abc")
    assert claimed.pk == request.pk
    other = Harness(clock, gateway_id="gw-other")

    other.step("reap_requests")  # the claim still runs: left alone
    request.refresh_from_db()
    assert request.status == Status.RUNNING and request.params == {"password": PASSWORD}

    clock.advance(requests.claim_seconds() + 1)
    other.step("reap_requests")

    request.refresh_from_db()
    assert request.status == Status.FAILED
    assert request.params == {"password": ""}
    assert request.error == (
        "the gateway running this sign-in step (gw-dead:1:abc) stopped before it finished: start the sign-in again"
    )
    assert not GatewayRequest.objects.filter(params__icontains=PASSWORD).exists()


def test_the_reaper_fails_an_expired_sign_in_within_a_minute_of_its_expiry(heidi, account, clock):
    step(Harness(clock, gateway_id="gw-first"), services.signin_start(agent=heidi))
    request = services.signin_submit_password(agent=heidi, password=PASSWORD)
    requests.requests_claim(agent_id=heidi.pk, holder="gw-dead:1:abc")
    gateway = Harness(clock, gateway_id="gw-other")
    clock.advance(requests.claim_seconds() - 1)
    gateway.step("reap_requests")  # its pass just before the expiry: the worst case
    clock.advance(2)  # expired now

    waited = 0
    while request.status != Status.FAILED and waited <= 60:
        gateway.step("reap_requests")
        request.refresh_from_db()
        clock.advance(1)
        waited += 1
    assert request.status == Status.FAILED and request.params == {"password": ""}
    assert waited <= 60
