"""/api/v1/agents: list, read, enable, disable and restart, with the admin's services and rules."""

from __future__ import annotations

import pytest

from agents.models import Agent
from conversations.models import ActivityEvent
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db


def test_the_list_pages_in_name_order_with_a_next_link(api, clock):
    for name in ("Orla", "Bramble", "Wendy"):
        make_agent(name)

    first = api.get("/agents", limit=2).json()
    assert [a["name"] for a in first["items"]] == ["Bramble", "Orla"]
    assert first["count"] == 3
    assert first["next"] == "http://testserver/api/v1/agents?limit=2&offset=2"
    second = api.client.get(first["next"], headers=api._headers()).json()
    assert [a["name"] for a in second["items"]] == ["Wendy"]
    assert second["next"] is None


def test_the_page_size_is_bounded(api, wendy):
    answer = api.get("/agents", limit=500)
    assert answer.status_code == 422
    assert answer.json()["field"] == "limit"
    assert "less than or equal to 200" in str(answer.json()["detail"])


def test_reading_an_agent(api, wendy):
    body = api.get(f"/agents/{wendy.pk}").json()
    assert (body["name"], body["transport"], body["running"]) == ("Wendy", "sandbox", True)


def test_disable_then_enable_through_the_admin_services(api, wendy, clock):
    disabled = api.post(f"/agents/{wendy.pk}/disable")
    assert disabled.status_code == 200 and disabled.json()["disabled"] is True
    assert Agent.objects.get(pk=wendy.pk).disabled

    enabled = api.post(f"/agents/{wendy.pk}/enable").json()
    assert (enabled["disabled"], enabled["running"]) == (False, True)
    restarts = ActivityEvent.objects.filter(agent=wendy).values_list("summary", flat=True)
    assert any("owner" in summary for summary in restarts), list(restarts)


def test_enabling_a_running_agent_changes_nothing(api, wendy, clock):
    assert api.post(f"/agents/{wendy.pk}/enable").json()["running"] is True
    assert not ActivityEvent.objects.filter(agent=wendy).exists()


def test_restart_clears_a_stop_and_its_error(api, wendy, clock):
    Agent.objects.filter(pk=wendy.pk).update(stopped=True, last_error="AUTH_KEY_UNREGISTERED")

    body = api.post(f"/agents/{wendy.pk}/restart").json()

    assert (body["stopped"], body["last_error"]) == (False, "")
    assert ActivityEvent.objects.filter(agent=wendy).count() == 1


def test_staff_without_permissions_see_no_agent(api_as, make_staff, wendy):
    api = api_as(make_staff("nobody"))
    assert api.get("/agents").json() == {"items": [], "count": 0, "next": None}
    assert api.get(f"/agents/{wendy.pk}").status_code == 404
    assert api.post(f"/agents/{wendy.pk}/disable").status_code == 404
    assert not Agent.objects.get(pk=wendy.pk).disabled


def test_viewers_may_read_but_not_disable(api_as, make_staff, wendy):
    api = api_as(make_staff("viewer", "agents.view_agent"))
    assert api.get(f"/agents/{wendy.pk}").status_code == 200
    refused = api.post(f"/agents/{wendy.pk}/disable")
    assert refused.status_code == 403
    assert "agents.change_agent" in refused.json()["detail"]
    assert not Agent.objects.get(pk=wendy.pk).disabled


def test_staff_with_the_change_permission_may_disable(api_as, make_staff, wendy):
    api = api_as(make_staff("editor", "agents.view_agent", "agents.change_agent"))
    assert api.post(f"/agents/{wendy.pk}/disable").status_code == 200
    assert Agent.objects.get(pk=wendy.pk).disabled


def test_an_agent_that_does_not_exist_is_404_with_the_fix(api, wendy):
    answer = api.get(f"/agents/{wendy.pk + 100}")
    assert answer.status_code == 404
    assert "/api/v1/agents" in answer.json()["detail"]
