"""The admin shows which enabled agents share a phone, the reason the gateway starts only one of them."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse

from agents.models import AgentLease
from cindy_site.testing.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_the_agent_list_and_page_say_which_enabled_agents_share_a_phone(verified_client, clock):
    heidi = AgentFactory(name="Heidi", phone="+12345678901", transport="telegram")
    mary = AgentFactory(name="Mary", phone="+1 234 567 8901", transport="telegram")
    AgentFactory(name="GameMaster", phone="+12345678901", disabled=True, transport="telegram")
    AgentFactory(name="Sandy", phone="+12345678901")  # the sandbox never uses its phone
    now = clock.now()
    AgentLease.objects.create(  # Heidi's lease is live: she runs, Mary waits
        agent=heidi,
        holder="gw:1:aa",
        acquired_at=now,
        heartbeat_at=now,
        expires_at=now + dt.timedelta(seconds=60),
    )

    listing = verified_client.get(reverse("admin:agents_agent_changelist")).content.decode()
    assert "online · phone shared with Mary" in listing
    assert "offline · phone shared with Heidi" in listing
    assert "disabled · phone shared" not in listing
    assert re.findall(r"phone shared with ([^<]*)<", listing) == ["Mary", "Heidi"]  # no Sandy, no GameMaster

    page = verified_client.get(reverse("admin:agents_agent_change", args=[mary.pk])).content.decode()
    assert (
        "No gateway holds this agent: its phone is also the phone of enabled agent Heidi, which runs on "
        "that Telegram account." in page
    )


def test_enabling_a_persona_whose_phone_another_enabled_one_has_warns_naming_both(verified_client):
    AgentFactory(name="Heidi", phone="+12345678901", transport="telegram")
    mary = AgentFactory(name="Mary", phone="+12345678901", disabled=True, transport="telegram")

    response = verified_client.post(
        reverse("admin:agents_agent_changelist"),
        {"action": "enable_agents", "_selected_action": [mary.pk]},
        follow=True,
    )

    shown = [str(m) for m in response.context["messages"]]
    assert any(
        m.startswith("Heidi, Mary share the phone +12345678901: one Telegram account runs one") for m in shown
    )
