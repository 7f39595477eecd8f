"""`# Current Activity`: the schedule entry covering now, in the volatile end of the prompt."""

from __future__ import annotations

import datetime as dt

import pytest

from llm.prompt import TurnContext, build_plan_request
from llm.tests.conftest import add_message
from memory.models import ScheduleEntry

pytestmark = pytest.mark.django_db

DAY = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)  # Paris is UTC+1 in January


def _entry(agent, activity, start_hour, end_hour, *, responsiveness, description=""):
    return ScheduleEntry.objects.create(
        agent=agent,
        activity=activity,
        description=description,
        start=DAY + dt.timedelta(hours=start_hour),
        end=DAY + dt.timedelta(hours=end_hour),
        responsiveness=responsiveness,
        created=DAY,
    )


@pytest.fixture
def workday(agent):
    _entry(agent, "Baking at the shop", 8, 11, responsiveness=30, description="Busy with the morning rush.")
    _entry(agent, "Lunch with Bob", 11, 12, responsiveness=90, description="At the café on the corner.")


def _final(request) -> str:
    return request.turns[-1].parts[0].text


def test_the_activity_covering_now_is_shown_as_the_original_shows_it(workday, dm, clock):
    clock.set(DAY + dt.timedelta(hours=9, minutes=15))

    final = _final(build_plan_request(dm, TurnContext()))

    assert (
        "# Current Activity\n\n"
        "You are currently: Baking at the shop (09:00 AM - 12:00 PM)\n"
        "Busy with the morning rush.\n"
        "Responsiveness: 30 (0 asleep, 100 answering within seconds): "
        "reply as promptly and as fully as this activity allows\n"
        "Time remaining: 1 hour and 45 minutes\n"
        "Next activity: Lunch with Bob (starts at 12:00 PM)\n"
        "At the café on the corner.\n\n"
        "You can retrieve your full schedule by accessing: file:schedule.json"
    ) in final
    assert final.index("# Current Time") < final.index("# Current Activity") < final.index("# Instructions")


def test_between_activities_the_next_one_is_announced(workday, dm, clock):
    clock.set(DAY + dt.timedelta(hours=7, minutes=30))

    final = _final(build_plan_request(dm, TurnContext()))

    assert "Nothing is happening right now.\nNext activity: Baking at the shop (starts at 09:00 AM)" in final
    assert "Responsiveness" not in final


def test_without_schedule_entries_there_is_no_activity_section(agent, dm, clock):
    _entry(agent, "Yesterday's shift", -20, -12, responsiveness=50)

    assert "# Current Activity" not in _final(build_plan_request(dm, TurnContext()))


def test_the_cacheable_prefix_is_unchanged_by_the_activity(workday, dm, clock):
    add_message(dm, 1, "good morning!")
    add_message(dm, 2, "morning :)", is_agent=True)
    clock.set(DAY + dt.timedelta(hours=10))
    at_work = build_plan_request(dm, TurnContext(target_message_id=1))
    clock.set(DAY + dt.timedelta(hours=11, minutes=30))
    at_lunch = build_plan_request(dm, TurnContext(target_message_id=1))

    assert "Baking at the shop (09:00 AM" in _final(at_work)
    assert "You are currently: Lunch with Bob" in _final(at_lunch)
    assert at_work.system == at_lunch.system
    assert at_work.turns[:-1] == at_lunch.turns[:-1] and len(at_work.turns) == 3
    assert "Lunch with Bob" not in at_work.system + "".join(
        p.text for t in at_work.turns[:-1] for p in t.parts
    )
