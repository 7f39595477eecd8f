"""/api/v1/costs, /health and /metrics."""

from __future__ import annotations

from decimal import Decimal

import pytest

from conversations.models import Conversation, Message
from llm.models import LLMCall

pytestmark = pytest.mark.django_db


def _call(agent, clock, cost: str) -> None:
    LLMCall.objects.create(created=clock.now(), agent=agent, provider="gemini", model="m", cost=Decimal(cost))


def test_costs_per_agent_and_day(api, wendy, heidi, clock):
    _call(wendy, clock, "0.25")
    _call(wendy, clock, "0.50")
    _call(heidi, clock, "1.00")

    body = api.get("/costs", days=3).json()
    assert len(body["days"]) == 3
    assert {a["name"]: (a["values"][-1], a["total"]) for a in body["agents"]} == {
        "Heidi": ("1.000000", "1.000000"),
        "Wendy": ("0.750000", "0.750000"),
    }
    assert Decimal(body["total"]) == Decimal("1.75")


def test_costs_list_only_the_agents_whose_calls_the_user_may_see(api_as, make_staff, wendy, clock):
    _call(wendy, clock, "0.25")
    assert api_as(make_staff("nobody")).get("/costs").json()["agents"] == []
    accountant = api_as(make_staff("accountant", "llm.view_llmcall"))
    assert [a["name"] for a in accountant.get("/costs").json()["agents"]] == ["Wendy"]
    assert api_as(make_staff("x")).get("/costs", days=0).status_code == 422


def test_health_reports_agents_no_gateway_drives(api, wendy, clock):
    body = api.get("/health").json()
    assert body["ok"] is False
    assert any("agent Wendy: no gateway drives it" in problem for problem in body["problems"])
    assert body["processes"] == []


def test_the_metrics_summary_has_the_prometheus_samples(api, wendy, clock):
    chat = Conversation.objects.create(agent=wendy, peer_id=1001, kind="dm")
    Message.objects.create(conversation=chat, message_id=1, date=clock.now(), text="hi", sender_id=1001)

    samples = api.get("/metrics").json()["samples"]
    messages = [s for s in samples if s["name"].startswith("cindy_messages")]
    assert messages and any(s["labels"].get("agent") == "Wendy" and s["value"] == 1 for s in messages), (
        messages
    )


def test_health_and_metrics_leave_out_agents_the_user_may_not_see(api, api_as, make_staff, wendy, clock):
    chat = Conversation.objects.create(agent=wendy, peer_id=1001, kind="dm")
    Message.objects.create(conversation=chat, message_id=1, date=clock.now(), text="hi", sender_id=1001)
    nobody = api_as(make_staff("nobody"))

    assert not any("Wendy" in problem for problem in nobody.get("/health").json()["problems"])
    assert any("Wendy" in problem for problem in api.get("/health").json()["problems"])
    assert any(s["labels"].get("agent") == "Wendy" for s in api.get("/metrics").json()["samples"])
    assert not any(s["labels"].get("agent") == "Wendy" for s in nobody.get("/metrics").json()["samples"])


def test_summaries_need_a_token(api_as):
    for path in ("/costs", "/health", "/metrics"):
        assert api_as(None).get(path).status_code == 401
