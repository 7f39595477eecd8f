"""The dashboard's LLM routes panel: each route's circuit breaker, for staff who may view LLM calls."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission

from cindy_site.clock import now
from dashboard.tests.conftest import HOSTILE
from llm.models import RouteBreaker

pytestmark = pytest.mark.django_db


@pytest.fixture
def llm_viewer(verified, staff):
    staff.user_permissions.add(Permission.objects.get(content_type__app_label="llm", codename="view_llmcall"))
    return verified


def test_it_shows_a_closed_and_an_open_breaker_with_the_error_escaped(llm_viewer, clock):
    RouteBreaker.objects.create(provider="gemini", model="gemini-2.5-flash", state="closed", changed=now())
    RouteBreaker.objects.create(
        provider="openai",
        model="gpt-4o-mini",
        state="open",
        failures=3,
        open_until=now() + dt.timedelta(seconds=60),
        last_error=f"503 {HOSTILE}",
        changed=now(),
    )

    html = llm_viewer.client.get("/dashboard/").content.decode()

    panel = html[
        html.index('id="breakers-panel"') : html.index("</section>", html.index('id="breakers-panel"'))
    ]
    closed = panel[
        panel.index('class="breaker-closed"') : panel.index("</tr>", panel.index('class="breaker-closed"'))
    ]
    assert "gemini/gemini-2.5-flash" in closed and '<span class="badge ok">closed</span>' in closed
    opened = panel[
        panel.index('class="breaker-open"') : panel.index("</tr>", panel.index('class="breaker-open"'))
    ]
    assert "openai/gpt-4o-mini" in opened and '<span class="badge bad">open</span>' in opened
    assert '<td class="num">3</td>' in opened
    assert (now() + dt.timedelta(seconds=60)).isoformat() in opened
    assert "cool-down over" not in opened
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in opened
    assert HOSTILE not in html


def test_an_open_breaker_past_its_cool_down_says_the_next_turn_probes_it(llm_viewer, clock):
    RouteBreaker.objects.create(
        provider="openai", model="gpt-4o-mini", state="open", failures=3, open_until=now(), changed=now()
    )
    clock.advance(5)

    html = llm_viewer.client.get("/dashboard/").content.decode()

    assert "cool-down over; the next turn probes it" in html


def test_without_breaker_rows_it_says_every_route_is_closed(llm_viewer):
    html = llm_viewer.client.get("/dashboard/").content.decode()

    assert 'id="breakers-empty"' in html and 'id="breakers-table"' not in html


def test_staff_who_may_not_view_llm_calls_see_no_route_panel(verified, clock):
    RouteBreaker.objects.create(
        provider="openai",
        model="gpt-4o-mini",
        state="open",
        failures=3,
        last_error="secret detail",
        changed=now(),
    )

    response = verified.client.get("/dashboard/")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="breakers-panel"' not in html and "secret detail" not in html
