"""The memory reads every turn runs, in plain SQL (memory/selectors.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from engine.tests.cast import make_agent
from memory.models import ScheduleEntry, Summary
from memory.selectors import schedule_entries_ahead, schedule_entry_covering, summary_covered_id

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.UTC)


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def _entry(agent, start_hours: float, end_hours: float, name: str) -> ScheduleEntry:
    return ScheduleEntry.objects.create(
        agent=agent,
        activity=name,
        start=AT + dt.timedelta(hours=start_hours),
        end=AT + dt.timedelta(hours=end_hours),
        responsiveness=50,
        created=AT,
    )


def test_the_entry_covering_a_time_and_the_entries_ahead_are_the_orms():
    agent = make_agent()
    now_entry = _entry(agent, -1, 1, "lunch")
    _entry(agent, 1, 2, "walk")
    _entry(agent, 3, 4, "read")
    _entry(agent, -5, -2, "over")
    found = schedule_entry_covering(agent_id=agent.pk, at=AT)
    assert _values(found) == _values(ScheduleEntry.objects.get(pk=now_entry.pk))
    assert found.start.tzinfo is not None
    assert schedule_entry_covering(agent_id=agent.pk, at=AT + dt.timedelta(hours=2, minutes=30)) is None
    assert (
        schedule_entry_covering(agent_id=agent.pk, at=AT + dt.timedelta(hours=1)).activity == "walk"
    )  # end excluded
    assert [e.activity for e in schedule_entries_ahead(agent_id=agent.pk, at=AT)] == ["lunch", "walk"]
    assert [e.activity for e in schedule_entries_ahead(agent_id=agent.pk, at=AT, limit=5)] == [
        "lunch",
        "walk",
        "read",
    ]


def test_the_covered_id_is_the_highest_last_message_of_the_channels_summaries():
    agent = make_agent()
    for channel, topic, last in ((7, 0, 40), (7, 0, 90), (7, 3, 120), (8, 0, 500), (7, 0, None)):
        Summary.objects.create(
            agent=agent, channel_id=channel, topic_id=topic, content="s", last_message_id=last, created=AT
        )
    assert summary_covered_id(agent_id=agent.pk, channel_id=7) == 90
    assert summary_covered_id(agent_id=agent.pk, channel_id=7, topic_id=3) == 120
    assert summary_covered_id(agent_id=agent.pk, channel_id=9) is None
