"""Restarting a stopped agent from the admin clears the stop and its error, and says who did it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent
from conversations.models import ActivityEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def stopped(clock):
    return Agent.objects.create(
        name="Stella",
        phone="+15550003",
        instructions="x",
        stopped=True,
        last_error="AuthKeyUnregisteredError",
        last_error_at=clock.now(),
    )


def test_the_restart_button_clears_the_stop_and_records_who_restarted(verified_client, stopped):
    response = verified_client.post(reverse("admin:agents_agent_restart", args=[stopped.pk]))

    assert response.status_code == 302
    stopped.refresh_from_db()
    assert (stopped.stopped, stopped.last_error, stopped.last_error_at) == (False, "", None)
    event = ActivityEvent.objects.get(agent=stopped)
    assert (
        event.summary == "Stella restarted by operator (was: stopped; last error: AuthKeyUnregisteredError)"
    )


def test_the_restart_url_refuses_a_get(verified_client, stopped):
    response = verified_client.get(reverse("admin:agents_agent_restart", args=[stopped.pk]))
    assert response.status_code == 403
    stopped.refresh_from_db()
    assert stopped.stopped


def test_the_enable_action_restarts_stopped_and_disabled_agents_only(verified_client, stopped):
    disabled = Agent.objects.create(name="Dora", phone="+15550004", instructions="x", disabled=True)
    running = Agent.objects.create(name="Rita", phone="+15550005", instructions="x")
    response = verified_client.post(
        reverse("admin:agents_agent_changelist"),
        {"action": "enable_agents", "_selected_action": [stopped.pk, disabled.pk, running.pk]},
    )
    assert response.status_code == 302
    assert list(Agent.objects.filter(stopped=True) | Agent.objects.filter(disabled=True)) == []
    assert sorted(ActivityEvent.objects.values_list("agent__name", flat=True)) == ["Dora", "Stella"]
