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


def _walk_tomorrow_at_nine(agent, clock):
    """A London agent (UTC+0 in January, the clock at 2026-01-05 12:00 UTC) with a 09:00 event tomorrow."""
    from memory.models import ScheduledEvent

    Agent.objects.filter(pk=agent.pk).update(timezone="Europe/London")
    return ScheduledEvent.objects.create(
        agent=agent,
        channel_id=7,
        intent="Ask about the walk",
        time_raw="2026-01-06T09:00:00",
        created=clock.now(),
    )


def test_a_new_timezone_with_events_ahead_needs_the_choice(api, wendy, clock):
    event = _walk_tomorrow_at_nine(wendy, clock)

    answer = api.patch(f"/agents/{wendy.pk}", {"timezone": "Asia/Tokyo"})

    assert answer.status_code == 422
    assert answer.json()["field"] == "timezone_change"
    assert "1 future event" in answer.json()["detail"] and "keep_instants" in answer.json()["detail"]
    assert Agent.objects.get(pk=wendy.pk).timezone == "Europe/London"
    event.refresh_from_db()
    assert event.due_at.isoformat() == "2026-01-06T09:00:00+00:00"


@pytest.mark.parametrize(
    "change, due",
    [("keep_local_times", "2026-01-06T00:00:00+00:00"), ("keep_instants", "2026-01-06T09:00:00+00:00")],
)
def test_the_choice_moves_or_keeps_the_events_and_is_recorded(api, wendy, clock, change, due):
    event = _walk_tomorrow_at_nine(wendy, clock)

    answer = api.patch(f"/agents/{wendy.pk}", {"timezone": "Asia/Tokyo", "timezone_change": change})

    assert answer.status_code == 200, answer.json()
    assert answer.json()["timezone"] == "Asia/Tokyo"
    event.refresh_from_db()
    assert event.due_at.isoformat() == due
    recorded = ActivityEvent.objects.get(agent=wendy)
    assert recorded.data == {
        "timezone_before": "Europe/London",
        "timezone": "Asia/Tokyo",
        "timezone_change": change,
        "by": "owner",
    }


def test_a_new_timezone_without_events_needs_no_choice(api, wendy, clock):
    answer = api.patch(f"/agents/{wendy.pk}", {"timezone": "Asia/Tokyo"})

    assert answer.status_code == 200
    assert Agent.objects.get(pk=wendy.pk).timezone == "Asia/Tokyo"
    assert ActivityEvent.objects.get(agent=wendy).data["timezone_change"] == ""


def test_a_timezone_that_is_no_zone_or_an_unknown_choice_is_refused_by_name(api, wendy, clock):
    zone = api.patch(f"/agents/{wendy.pk}", {"timezone": "Mars/Base"})
    assert (zone.status_code, zone.json()["field"]) == (422, "timezone")
    assert "not an IANA zone" in zone.json()["detail"]

    choice = api.patch(f"/agents/{wendy.pk}", {"timezone": "Asia/Tokyo", "timezone_change": "shrug"})
    assert choice.status_code == 422
    assert "timezone_change" in str(choice.json())


def test_changing_the_timezone_needs_the_change_permission(api_as, make_staff, wendy, clock):
    viewer = make_staff("viewer", "agents.view_agent")

    answer = api_as(viewer).patch(f"/agents/{wendy.pk}", {"timezone": "Asia/Tokyo"})

    assert answer.status_code == 403
    assert Agent.objects.get(pk=wendy.pk).timezone != "Asia/Tokyo"
