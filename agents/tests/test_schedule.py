from __future__ import annotations

import datetime as dt

import pytest

from agents.persona import parse_persona
from agents.schedule import ScheduleError, asleep_until, parse_sleep_windows

UTC = dt.UTC


def test_free_text_without_asleep_lines_means_always_awake():
    text = "Mornings: opens the shop.\nEvenings: reads."
    assert parse_sleep_windows(text) == ()
    assert asleep_until(schedule=text, timezone="", when=dt.datetime(2026, 1, 1, 3, tzinfo=UTC)) is None


def test_a_window_across_midnight_wakes_the_next_morning_in_the_agents_zone():
    schedule = "Asleep: 22:30-07:15"
    at_night = dt.datetime(2026, 3, 2, 23, 0, tzinfo=UTC)  # 00:00 in Berlin
    wake = asleep_until(schedule=schedule, timezone="Europe/Berlin", when=at_night)
    assert wake == dt.datetime(2026, 3, 3, 6, 15, tzinfo=UTC)
    noon = dt.datetime(2026, 3, 3, 11, 0, tzinfo=UTC)
    assert asleep_until(schedule=schedule, timezone="Europe/Berlin", when=noon) is None


def test_several_windows_on_one_line_and_sleep_keyword():
    windows = parse_sleep_windows("- Sleep: 13:00 to 14:00, 23:00–06:30")
    assert [(w.start.hour, w.end.hour) for w in windows] == [(13, 14), (23, 6)]
    nap = dt.datetime(2026, 3, 3, 13, 30, tzinfo=UTC)
    assert asleep_until(schedule="Sleep: 13:00-14:00", timezone="UTC", when=nap) == nap.replace(
        hour=14, minute=0
    )


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("Asleep: late, 23:00-07:00", '"late" is not a time range (e.g. Asleep: 22:30-07:15)'),
        ("Asleep: from 23:00", '"from 23:00" is not a time range'),
        ("Asleep: 25:00-07:00", "outside 00:00-23:59"),
        ("Asleep: 07:00-07:00", "starts and ends at the same time"),
    ],
)
def test_a_malformed_asleep_line_is_a_clear_error(line, fragment):
    with pytest.raises(ScheduleError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        parse_sleep_windows(line)


def test_the_persona_importer_keeps_a_malformed_schedule_and_warns_with_file_and_field():
    text = (
        "# Agent Name\n\nHeidi\n\n# Agent Phone\n\n+15551234567\n\n"
        "# Daily Schedule\n\nAsleep: whenever after 22:00\n\n# Agent Instructions\n\nBe kind.\n"
    )
    persona = parse_persona(text, source="agents/Heidi.md")
    assert persona.daily_schedule == "Asleep: whenever after 22:00"
    [warning] = persona.warnings
    assert warning.startswith('agents/Heidi.md: "Daily Schedule"')
    assert '"whenever after 22:00" is not a time range' in warning


def test_sleep_lines_without_clock_times_are_free_text():
    assert parse_sleep_windows("Sleep: whenever the shop is quiet\nAsleep: rarely") == ()


def test_an_unknown_timezone_falls_back_to_the_site_time_zone(settings):
    settings.TIME_ZONE = "Asia/Tokyo"
    at_23_tokyo = dt.datetime(2025, 3, 1, 14, 0, tzinfo=dt.UTC)  # 23:00 in Tokyo
    wake = asleep_until(schedule="Asleep: 22:00-07:00", timezone="Mars/Olympus_Mons", when=at_23_tokyo)
    assert wake == dt.datetime(2025, 3, 1, 22, 0, tzinfo=dt.UTC)  # 07:00 in Tokyo
