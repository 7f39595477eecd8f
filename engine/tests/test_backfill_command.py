"""`manage.py backfill`: what it refuses before it asks the gateway for anything, and a page request
that no gateway takes. The fetching itself runs against the MTProto stand-in in
telegram/tests/test_standin_backfill.py."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command

from agents.models import AgentLease, GatewayRequest
from conversations.models import Conversation
from engine.backfill import BackfillError, gateway_wait
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db


def _backfill(*args: str) -> str:
    out = io.StringIO()
    call_command("backfill", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def heidi(clock):
    agent = make_agent("Heidi", transport="telegram")
    AgentLease.objects.create(
        agent=agent,
        holder="gw-test:1",
        acquired_at=clock.now(),
        heartbeat_at=clock.now(),
        expires_at=clock.now() + dt.timedelta(seconds=60),
    )
    Conversation.objects.create(agent=agent, peer_id=1001, kind="dm", title="Bob")
    return agent


def test_a_sandbox_agent_is_told_backfill_is_for_telegram_agents():
    make_agent("Wendy")
    with pytest.raises(CommandError, match="agent Wendy is a Sandbox agent: backfill fetches a Telegram"):
        _backfill("Wendy", "--all")
    assert not GatewayRequest.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Nobody", "--all"], "no agent named 'Nobody' \\(agents: Heidi\\)"),
        (["Heidi"], "say how far back: --days N .* or --all"),
        (["Heidi", "--days", "0"], "--days 0: give 1 to 11000 days, or --all"),
        (["Heidi", "--days", "3", "--all"], "not allowed with argument --days"),
        (["Heidi", "--all", "--chat", "2002"], "agent Heidi has no chat 2002 in its mirror: --chat takes"),
    ],
)
def test_bad_arguments_name_the_value_and_the_fix(heidi, args, message):
    with pytest.raises(CommandError, match=message):
        _backfill(*args)
    assert not GatewayRequest.objects.exists()


def test_an_agent_no_gateway_runs_is_refused(heidi):
    AgentLease.objects.all().delete()
    with pytest.raises(CommandError, match="agent Heidi is not running in any gateway .* runagents"):
        _backfill("Heidi", "--days", "7")


def test_a_page_request_no_gateway_takes_is_withdrawn(heidi, clock):
    request = GatewayRequest.objects.create(
        agent=heidi, kind="backfill_page", params={"peer_id": 1001, "before_id": 0}, created=clock.now()
    )
    with pytest.raises(BackfillError, match=f"page request {request.pk} withdrawn: no gateway took it"):
        gateway_wait(request.pk, stopping=lambda: False, claim_timeout=0)
    request.refresh_from_db()
    assert request.status == "failed" and request.error.startswith("withdrawn by the backfill")


def test_a_page_request_still_waiting_at_ctrl_c_is_withdrawn(heidi, clock):
    request = GatewayRequest.objects.create(
        agent=heidi, kind="backfill_page", params={"peer_id": 1001, "before_id": 0}, created=clock.now()
    )
    with pytest.raises(BackfillError, match="interrupted before it ran"):
        gateway_wait(request.pk, stopping=lambda: True)
    assert GatewayRequest.objects.get(pk=request.pk).status == "failed"


def test_a_finished_request_is_returned_as_the_gateway_left_it(heidi, clock):
    request = GatewayRequest.objects.create(
        agent=heidi,
        kind="backfill_page",
        params={"peer_id": 1001},
        status="done",
        result={"stored": 3},
        created=clock.now(),
    )
    assert gateway_wait(request.pk, stopping=lambda: True).result == {"stored": 3}
