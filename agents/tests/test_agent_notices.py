"""An agent running with a configuration problem says so on its admin page, with the value and the fix."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent

pytestmark = pytest.mark.django_db


def test_the_agent_page_warns_about_an_invalid_timezone(verified_client, settings):
    settings.TIME_ZONE = "UTC"
    agent = Agent.objects.create(name="Mara", phone="+15550077", instructions="x", timezone="Mars/Base")
    response = verified_client.get(reverse("admin:agents_agent_change", args=[agent.pk]))
    assert response.status_code == 200
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    assert len(warnings) == 1
    assert warnings[0].startswith('Agent Timezone "Mars/Base" is not an IANA zone')
    assert "TIME_ZONE (UTC)" in warnings[0]

    agent.timezone = "Europe/Paris"
    agent.save()
    response = verified_client.get(reverse("admin:agents_agent_change", args=[agent.pk]))
    assert not [m for m in response.context["messages"] if m.level_tag == "warning"]
