"""The schedule's placement rule (memory.services.schedule), which the policy, the API and the admin share."""

from __future__ import annotations

import datetime as dt

import pytest

from engine.tests.cast import make_agent
from memory.models import ScheduleEntry
from memory.services.schedule import clash_label, schedule_clash

pytestmark = pytest.mark.django_db

UTC = dt.UTC


def at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2030, 4, 1, hour, minute, tzinfo=UTC)


@pytest.fixture
def milking():
    agent = make_agent()
    return ScheduleEntry.objects.create(
        agent=agent, entry_id="act-milking", activity="Milking", start=at(8), end=at(12), created=at(0)
    )


def test_an_entry_inside_another_clashes_with_it(milking):
    assert schedule_clash(agent_id=milking.agent_id, start=at(9), end=at(10)) == milking


def test_an_entry_reaching_into_another_from_before_clashes_with_it(milking):
    assert schedule_clash(agent_id=milking.agent_id, start=at(7), end=at(8, 1)) == milking


def test_an_entry_may_start_exactly_when_the_previous_one_ends(milking):
    assert schedule_clash(agent_id=milking.agent_id, start=at(12), end=at(13)) is None
    assert schedule_clash(agent_id=milking.agent_id, start=at(6), end=at(8)) is None


def test_the_entry_being_changed_does_not_clash_with_itself(milking):
    assert schedule_clash(agent_id=milking.agent_id, start=at(9), end=at(13), entry_id="act-milking") is None
    assert schedule_clash(agent_id=milking.agent_id, start=at(9), end=at(13), pk=milking.pk) is None


def test_another_agents_entries_never_clash(milking):
    other = make_agent(name="Other")
    assert schedule_clash(agent_id=other.pk, start=at(9), end=at(10)) is None


def test_the_earliest_of_several_clashes_is_named(milking):
    ScheduleEntry.objects.create(
        agent_id=milking.agent_id,
        entry_id="act-lunch",
        activity="Lunch",
        start=at(12),
        end=at(13),
        created=at(0),
    )
    clash = schedule_clash(agent_id=milking.agent_id, start=at(11), end=at(14))
    assert clash_label(clash) == '"Milking" (act-milking, 2030-04-01 08:00-12:00)'
