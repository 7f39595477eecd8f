"""The dashboard page: who gets in, and what it shows."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.urls import reverse

from agents.models import AgentLease
from cindy_site.clock import now
from conversations.services.activity import record_event
from dashboard import selectors
from llm.models import LLMCall
from llm.usage import price_for

pytestmark = pytest.mark.django_db


def _initial(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="dashboard-initial" type="application/json">') + len(
        '<script id="dashboard-initial" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_anonymous_visitor_is_sent_to_the_admin_login(client):
    response = client.get("/dashboard/")
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))
    assert "next=/dashboard/" in response.url


def test_staff_without_a_one_time_code_is_sent_to_the_admin_login(unverified):
    response = unverified.client.get("/dashboard/")
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))


def test_non_staff_is_sent_to_the_admin_login_even_with_a_device(non_staff):
    assert non_staff.client.get("/dashboard/").status_code == 302


def test_verified_staff_sees_agents_usage_and_activity(verified, sandbox_agent, clock):
    AgentLease.objects.create(
        agent=sandbox_agent,
        holder="host:1:abc",
        acquired_at=now(),
        heartbeat_at=now(),
        expires_at=clock.advance(30),
    )
    clock.advance(-30)
    LLMCall.objects.create(
        created=now(),
        agent=sandbox_agent,
        provider="gemini",
        model="gemini-2.5-flash",
        input_tokens=100,
        output_tokens=20,
        cached_tokens=40,
        cost=Decimal("0.001250"),
    )
    record_event("message_in", agent_id=sandbox_agent.pk, summary="Alice: hi")

    response = verified.client.get("/dashboard/")

    assert response.status_code == 200
    initial = _initial(response)
    agent = initial["agents"][0]
    assert agent | {"online": True, "gateway": "host:1:abc"} == agent
    assert initial["usage"] == [
        {
            "agent_id": sandbox_agent.pk,
            "agent": "Wendy",
            "calls": 1,
            "input_tokens": 100,
            "output_tokens": 20,
            "cached_tokens": 40,
            "thinking_tokens": 0,
            "cost": "0.001250",
            "cached_share": "40.0 %",
            "saved": str(_cached_discount("gemini-2.5-flash", 40)),
            "explicit_saved": "0.000000",
        }
    ]
    assert [e["summary"] for e in initial["events"]] == ["Alice: hi"]


def _cached_discount(model: str, tokens: int) -> Decimal:
    """What `tokens` cached tokens save at the seeded prices: the input minus the cached input price."""
    price = price_for("gemini", model)
    saved = Decimal(tokens) * (price.input_per_million - price.cached_input_per_million) / 1_000_000
    return saved.quantize(Decimal("0.000001"))


def test_an_expired_lease_shows_the_agent_offline_with_its_last_heartbeat(sandbox_agent, clock):
    beat = now()
    AgentLease.objects.create(
        agent=sandbox_agent,
        holder="host:1:abc",
        acquired_at=beat,
        heartbeat_at=beat,
        expires_at=clock.advance(30),
    )
    clock.advance(1)
    row = selectors.agent_rows()[0]
    assert row["online"] is False
    assert row["last_heartbeat"] == beat.isoformat()


def test_usage_today_ignores_calls_from_yesterday(sandbox_agent, clock, settings):
    settings.TIME_ZONE = "UTC"
    LLMCall.objects.create(
        created=now(), agent=sandbox_agent, provider="gemini", model="m", cost=Decimal("1")
    )
    clock.advance(hours=24)
    assert selectors.llm_usage_today() == []


def test_a_gateway_that_stopped_reporting_shows_as_an_alert(verified, clock, settings):
    from engine.health import process_beat
    from engine.models import ProcessHeartbeat

    process_beat(name="gw-1", kind=ProcessHeartbeat.Kind.GATEWAY, pass_at=clock.now())
    process_beat(name="workers:h:1", kind=ProcessHeartbeat.Kind.WORKERS, workers=1)
    assert 'id="health-alerts"' not in verified.client.get("/dashboard/").content.decode()
    clock.advance(settings.CINDY_LEASE_SECONDS + 5)
    process_beat(name="workers:h:1", kind=ProcessHeartbeat.Kind.WORKERS, workers=1)
    html = verified.client.get("/dashboard/").content.decode()
    assert 'id="health-alerts"' in html
    assert "gateway gw-1 (pid" in html and f"no heartbeat for {settings.CINDY_LEASE_SECONDS + 5} s" in html


def test_an_agent_at_its_daily_spend_cap_shows_as_an_alert(verified, sandbox_agent, clock):
    sandbox_agent.daily_spend_cap = Decimal("0.10")
    sandbox_agent.save()
    LLMCall.objects.create(
        created=now(), agent=sandbox_agent, provider="gemini", model="gemini-3-flash", cost=Decimal("0.09")
    )
    assert "spend cap reached" not in verified.client.get("/dashboard/").content.decode()
    LLMCall.objects.create(
        created=now(), agent=sandbox_agent, provider="gemini", model="gemini-3-flash", cost=Decimal("0.01")
    )
    html = verified.client.get("/dashboard/").content.decode()
    assert "spend cap reached: Wendy spent $0.10 of its daily $0.10" in html
