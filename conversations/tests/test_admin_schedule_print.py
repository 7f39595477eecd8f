"""The printable schedule: every activity of a range of days, in the agent's timezone."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from cindy_site.testing.factories import AgentFactory
from memory.models import ScheduleEntry

pytestmark = pytest.mark.django_db

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def heidi(db):
    return AgentFactory(
        name="Heidi", timezone="Europe/Berlin", telegram_user_id=777123, telegram_username="heidi"
    )


def _entry(agent, activity: str, start: dt.datetime, hours: float, responsiveness: int = 50, **extra):
    return ScheduleEntry.objects.create(
        agent=agent,
        activity=activity,
        start=start,
        end=start + dt.timedelta(hours=hours),
        responsiveness=responsiveness,
        created=start,
        **extra,
    )


def _url(agent, **query) -> str:
    base = reverse("admin:memory_scheduleentry_print", args=[agent.pk])
    return base + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_it_prints_every_activity_of_the_range_in_the_agents_time(verified_client, heidi, clock):
    day = clock.now().astimezone(BERLIN).date()
    morning = dt.datetime.combine(day, dt.time(7), tzinfo=BERLIN)
    _entry(heidi, "Sleeping", morning - dt.timedelta(hours=9), 9, responsiveness=0)
    _entry(heidi, "Milking", morning, 2, description="The goats first\nthen the cow")
    _entry(heidi, "Market", morning + dt.timedelta(days=1, hours=2), 3, responsiveness=20)
    _entry(heidi, "Hiking", morning + dt.timedelta(days=5), 4)  # past `to`

    page = verified_client.get(
        _url(heidi, **{"from": day, "to": day + dt.timedelta(days=1)})
    ).content.decode()

    assert "Timezone: Europe/Berlin (+01:00)" in page  # November: CET
    assert "Telegram: @heidi (ID 777123)" in page
    assert f'{morning:%a %Y-%m-%d} 07:00</td><td class="when">09:00</td>' in page
    assert "The goats first<br>then the cow" in page
    assert 'class="asleep"' in page and "Sleeping" in page  # began the evening before, still shown
    assert "Market" in page and "Hiking" not in page
    assert page.index("Sleeping") < page.index("Milking") < page.index("Market")


def test_without_to_it_runs_to_the_last_planned_entry(verified_client, heidi, clock):
    day = clock.now().astimezone(BERLIN).date()
    noon = dt.datetime.combine(day, dt.time(12), tzinfo=BERLIN)
    _entry(heidi, "Lunch", noon, 1)
    _entry(heidi, "Choir", noon + dt.timedelta(days=3, hours=7), 2)

    page = verified_client.get(_url(heidi)).content.decode()

    assert f"Schedule: {day:%a %Y-%m-%d} – {day + dt.timedelta(days=3):%a %Y-%m-%d}" in page
    assert "Lunch" in page and "Choir" in page


def test_an_empty_range_says_nothing_is_planned(verified_client, heidi):
    page = verified_client.get(_url(heidi, **{"from": "2026-01-05", "to": "2026-01-05"})).content.decode()
    assert "Nothing is planned for these days." in page


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"from": "2026-13-01"}, "give days as YYYY-MM-DD"),
        ({"from": "2026-11-26", "to": "2026-11-20"}, "is before from"),
        ({"from": "2026-01-01", "to": "2026-12-31"}, "print at most 62 at a time"),
    ],
)
def test_a_bad_range_is_refused_naming_the_fix(verified_client, heidi, query, says):
    response = verified_client.get(_url(heidi, **query))
    assert response.status_code == 400
    assert says in response.content.decode()


def test_the_day_view_links_to_the_print_view(verified_client, heidi):
    timeline = reverse("admin:memory_scheduleentry_timeline", args=[heidi.pk]) + "?day=2026-11-26"
    page = verified_client.get(timeline).content.decode()
    assert f'href="{_url(heidi)}?from=2026-11-26"' in page
