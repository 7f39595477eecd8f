"""Reading event times and intervals, and an event's next firing."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from memory.schedule_times import TimeError, event_next_due, parse_event_time, parse_interval

UTC = dt.UTC


def test_a_naive_time_is_read_in_the_agents_zone_and_an_offset_is_kept():
    assert parse_event_time("2026-07-01T09:00:00", timezone="", agent_timezone="Europe/Paris") == dt.datetime(
        2026, 7, 1, 7, tzinfo=UTC
    )
    assert parse_event_time(
        "2026-07-01T09:00:00Z", timezone="", agent_timezone="Europe/Paris"
    ) == dt.datetime(2026, 7, 1, 9, tzinfo=UTC)


def test_the_tasks_timezone_overrides_any_offset_in_the_time():
    when = parse_event_time(
        "2026-02-28T09:30:00Z", timezone="America/Los_Angeles", agent_timezone="Europe/Paris"
    )
    assert when == dt.datetime(2026, 2, 28, 17, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "zone", "message"),
    [("tomorrow", "", "ISO 8601"), ("2026-01-01T10:00:00", "Mars/Base", "not an IANA zone")],
)
def test_unreadable_times_and_zones_say_how_to_fix_them(raw, zone, message):
    with pytest.raises(TimeError, match=message):
        parse_event_time(raw, timezone=zone, agent_timezone="UTC")


@pytest.mark.parametrize(
    ("raw", "seconds"), [("30 minutes", 1800), ("1 hour", 3600), ("2 days", 172800), ("1 weeks", 604800)]
)
def test_intervals_take_singular_or_plural_units(raw, seconds):
    assert parse_interval(raw) == seconds


@pytest.mark.parametrize("raw", ["often", "5 fortnights", "10 seconds"])
def test_unreadable_or_too_short_intervals_are_refused(raw):
    with pytest.raises(TimeError, match='"interval"'):
        parse_interval(raw)


def test_the_next_firing_skips_missed_steps_and_ends_after_the_last_occurrence():
    due = dt.datetime(2026, 1, 1, 9, tzinfo=UTC)
    event = SimpleNamespace(interval_seconds=3600, due_at=due, occurrences=None, fired_count=0)
    assert event_next_due(event, after=due) == due + dt.timedelta(hours=1)
    assert event_next_due(event, after=due + dt.timedelta(hours=3, minutes=5)) == due + dt.timedelta(hours=4)
    event.occurrences, event.fired_count = 3, 2
    assert event_next_due(event, after=due) is None
    assert event_next_due(SimpleNamespace(interval_seconds=None, due_at=due), after=due) is None
