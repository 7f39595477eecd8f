"""Changing an agent's timezone in the admin: the operator keeps either the local times of its future
events and schedule entries or their instants, and the activity stream records which."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from agents.models import Agent
from cindy_site.testing.factories import AgentFactory
from cindy_site.tests.test_admin_edits import form_data
from conversations.models import ActivityEvent
from memory.models import ScheduledEvent, ScheduleEntry
from memory.services.timezone_move import local_time_records, same_clock_time

pytestmark = pytest.mark.django_db

UTC = dt.UTC


def at(day: int, hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2026, 1, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def heidi(clock):
    """In London (UTC+0 in January) at 2026-01-05 12:00 UTC: a 09:00 event tomorrow, a 08:00-10:00
    entry tomorrow, an entry that has ended, and an event pinned to a zone of its own."""
    agent = AgentFactory(name="Heidi", timezone="Europe/London")
    created = clock.now()
    ScheduledEvent.objects.create(
        agent=agent,
        channel_id=7,
        entry_id="event-walk",
        intent="Ask about the walk",
        time_raw="2026-01-06T09:00:00",
        created=created,
    )
    ScheduledEvent.objects.create(
        agent=agent,
        channel_id=7,
        entry_id="event-ny",
        intent="Call New York",
        time_raw="2026-01-06T09:00:00",
        timezone="America/New_York",
        created=created,
    )
    ScheduleEntry.objects.create(
        agent=agent,
        entry_id="act-goats",
        activity="Milking the goats",
        start=at(6, 8),
        end=at(6, 10),
        created=created,
    )
    ScheduleEntry.objects.create(
        agent=agent,
        entry_id="act-breakfast",
        activity="Breakfast",
        start=at(5, 7),
        end=at(5, 8),
        created=created,
    )
    return agent


def _post_timezone(client, agent: Agent, zone: str, change: str | None):
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = form_data(client.get(url))
    data["timezone"] = zone
    if change is not None:
        data["timezone_change"] = change
    return client.post(url, data)


def _times(agent: Agent) -> dict[str, tuple]:
    events = {e.entry_id: (e.due_at, e.time_raw) for e in ScheduledEvent.objects.filter(agent=agent)}
    entries = {e.entry_id: (e.start, e.end) for e in ScheduleEntry.objects.filter(agent=agent)}
    return {**events, **entries}


def test_it_counts_only_records_in_the_agents_local_time_still_ahead(heidi, clock):
    records = local_time_records(agent_id=heidi.pk, at=clock.now())
    assert (records.events, records.entries) == (1, 1)
    assert records.describe() == ["1 future event", "1 schedule entry"]


def test_the_admin_refuses_a_new_timezone_without_the_choice_and_names_the_field(heidi, verified_client):
    before = _times(heidi)

    response = _post_timezone(verified_client, heidi, "Asia/Tokyo", None)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "timezone_change" in errors, errors
    assert "1 future event and 1 schedule entry" in errors["timezone_change"][0]
    assert "keep_local_times" in errors["timezone_change"][0]
    assert Agent.objects.get(pk=heidi.pk).timezone == "Europe/London"
    assert _times(heidi) == before
    assert not ActivityEvent.objects.filter(agent=heidi).exists()


def test_keeping_local_times_moves_the_instants_to_the_same_clock_times(heidi, verified_client):
    before = _times(heidi)

    response = _post_timezone(verified_client, heidi, "Asia/Tokyo", "keep_local_times")

    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    after = _times(heidi)
    # 09:00 in Tokyo (UTC+9) is 00:00 UTC; the text still reads 09:00, now in Tokyo.
    assert after["event-walk"] == (at(6, 0), "2026-01-06T09:00:00")
    assert after["act-goats"] == (at(5, 23), at(6, 1))
    # Its own zone, and the past, are not the agent's local time to keep.
    assert after["event-ny"] == before["event-ny"]
    assert after["act-breakfast"] == before["act-breakfast"]
    event = ActivityEvent.objects.get(agent=heidi)
    assert event.data["timezone_change"] == "keep_local_times"
    assert "from Europe/London to Asia/Tokyo" in event.summary
    assert "1 future event and 1 schedule entry keep their local times" in event.summary


def test_keeping_instants_leaves_the_moments_and_rewrites_the_events_written_time(heidi, verified_client):
    before = _times(heidi)

    response = _post_timezone(verified_client, heidi, "Asia/Tokyo", "keep_instants")

    assert response.status_code == 302
    after = _times(heidi)
    assert after["event-walk"] == (at(6, 9), "2026-01-06T18:00:00")  # the same moment, read in Tokyo
    assert {k: v for k, v in after.items() if k != "event-walk"} == {
        k: v for k, v in before.items() if k != "event-walk"
    }
    walk = ScheduledEvent.objects.get(entry_id="event-walk")
    walk.intent = "Ask about the long walk"
    walk.save()  # an edit reads the written time again: the instant holds
    assert ScheduledEvent.objects.get(pk=walk.pk).due_at == at(6, 9)
    event = ActivityEvent.objects.get(agent=heidi)
    assert event.data["timezone_change"] == "keep_instants"
    assert "keep their instants" in event.summary


def test_an_agent_without_events_or_schedule_changes_zone_without_a_question(clock, verified_client):
    agent = AgentFactory(name="Orla", timezone="Europe/London")
    ScheduleEntry.objects.create(
        agent=agent,
        entry_id="act-past",
        activity="Reading",
        start=at(5, 7),
        end=at(5, 8),
        created=clock.now(),
    )

    response = _post_timezone(verified_client, agent, "Asia/Tokyo", None)

    assert response.status_code == 302
    assert Agent.objects.get(pk=agent.pk).timezone == "Asia/Tokyo"
    assert ScheduleEntry.objects.get(agent=agent).start == at(5, 7)
    event = ActivityEvent.objects.get(agent=agent)
    assert event.data["timezone_change"] == ""
    assert "no future events or schedule entries to move" in event.summary


def test_saving_without_a_new_timezone_asks_nothing_and_records_nothing(heidi, verified_client):
    before = _times(heidi)
    url = reverse("admin:agents_agent_change", args=[heidi.pk])

    assert verified_client.post(url, form_data(verified_client.get(url))).status_code == 302
    assert _times(heidi) == before
    assert not ActivityEvent.objects.filter(agent=heidi).exists()


def test_the_same_clock_time_is_read_with_the_offset_of_its_own_date():
    london, tokyo = ZoneInfo("Europe/London"), ZoneInfo("Asia/Tokyo")
    summer = dt.datetime(2026, 7, 1, 8, 0, tzinfo=UTC)  # 09:00 BST
    assert same_clock_time(summer, old=london, new=tokyo) == dt.datetime(2026, 7, 1, 0, 0, tzinfo=UTC)
