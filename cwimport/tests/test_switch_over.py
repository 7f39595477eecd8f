"""A switch-over from the original's database keeps every timestamp and names every table.

The rows are written the way the original's `src/db` functions write them: `created` as the agent's
local wall time without an offset (it normalises the agent-zone ISO string and drops the offset),
`time_utc` and the task log's `timestamp` in UTC, summaries' message dates as midnight of a day, JSON
activities with offsets, NULLs where it leaves a column out.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from agents.access import agents_for, has_agent_perm
from agents.models import Agent, AgentGrant
from agents.roles import ROLES
from conversations.models import ActivityEvent
from cwimport.matching import AgentMatcher
from cwimport.report import TableReport
from cwimport.services import cw_state_import
from cwimport.tables.agent_activity import AgentActivityImporter
from cwimport.tests.cw_source import SCHEMA_TABLES
from media_catalog.models import MediaDescription
from memory.models import Intention, Memory, Note, Plan, ScheduledEvent, ScheduleEntry, Summary

pytestmark = pytest.mark.django_db

LOLA, BERND = 2001, 2002  # an agent in America/Los_Angeles and one in Europe/Berlin
UTC = dt.UTC


@pytest.fixture
def agents(db):
    lola = Agent.objects.create(
        name="Lola",
        phone="+15550000011",
        instructions="x",
        telegram_user_id=LOLA,
        timezone="America/Los_Angeles",
    )
    bernd = Agent.objects.create(
        name="Bernd", phone="+4930000012", instructions="x", telegram_user_id=BERND, timezone="Europe/Berlin"
    )
    return lola, bernd


ACTIVITIES = [
    {"id": "act-school", "start_time": "2026-01-16T08:00:00-08:00", "end_time": "2026-01-16T15:00:00-08:00",
     "activity_name": "School", "responsiveness": 20, "description": "Classes"},
    {"id": "act-broken", "start_time": "2026-01-16T15:00:00-08:00", "end_time": "half past never",
     "activity_name": "Homework", "responsiveness": 40, "description": "Maths"},
    {"id": "act-sleep", "start_time": "2026-01-16T22:00:00-08:00", "end_time": "2026-01-17T06:30:00-08:00",
     "activity_name": "Sleep", "responsiveness": 0, "description": ""},
]  # fmt: skip


def fill(src) -> None:
    # Lola: Los Angeles, winter (PST, UTC-8).
    src.insert("memories", id="memory-la", agent_telegram_id=LOLA, content="Zoë's birthday is in March",
               created="2026-01-15 18:52:19", creation_channel="Zoë", creation_channel_id=555,
               creation_channel_username="@zoe")  # fmt: skip
    src.insert("memories", id="memory-null", agent_telegram_id=LOLA, content="undated", created=None,
               creation_channel=None, creation_channel_id=None, creation_channel_username=None)  # fmt: skip
    src.insert("plans", id="plan-la", agent_telegram_id=LOLA, channel_id=555, content="Ask about March",
               created="2026-01-15 23:30:00")  # fmt: skip
    src.insert("intentions", id="intent-la", agent_telegram_id=LOLA, content="Send the recipe",
               created="2026-01-15 07:00:00")  # fmt: skip
    src.insert("summaries", id="summary-la", agent_telegram_id=LOLA, channel_id=555, content="They met.",
               min_message_id=1, max_message_id=40, first_message_date="2026-01-14 00:00:00",
               last_message_date="2026-01-15 00:00:00", created="2026-01-15 20:00:00")  # fmt: skip
    src.insert("events", id="event-la", agent_telegram_id=LOLA, channel_id=555, time_utc="2030-01-16 17:00:00",
               intent="Say good morning", interval_value="1 days", occurrences=None)  # fmt: skip
    src.insert("schedules", agent_telegram_id=LOLA, timezone="America/Los_Angeles",
               last_extended="2026-01-15 21:00:00", activities=json.dumps(ACTIVITIES))  # fmt: skip
    src.insert("task_execution_log", timestamp="2026-01-16 02:52:20", agent_telegram_id=LOLA,
               channel_telegram_id=555, action_kind="send", task_identifier="send-1a2b3c4d",
               action_details="Happy to hear it!", failure_message=None)  # fmt: skip
    # Bernd: Berlin, summer (CEST, UTC+2).
    src.insert("notes", id="note-be", agent_telegram_id=BERND, channel_id=777, content="Prefers tea",
               created="2026-07-01 09:00:00")  # fmt: skip
    src.insert("memories", id="memory-be", agent_telegram_id=BERND, content="Likes the lake",
               created="2026-07-01 00:30:00", creation_channel="Anna", creation_channel_id=777,
               creation_channel_username=None)  # fmt: skip
    # Shared tables.
    src.insert("media_metadata", unique_id="AgADcurated", kind="sticker", description="A waving cat",
               status="curated", sticker_set_name="Cats", sticker_name="👋")  # fmt: skip
    src.insert("media_metadata", unique_id="AgADai", kind="photo", description="A lake", status="generated")
    src.insert(
        "administrators", email="olivia@example.com", name="Olivia", avatar=None, last_login_attempt=None
    )
    src.insert(
        "administrators", email="sam@example.com", name="Sam", last_login_attempt="2026-01-10 12:00:00"
    )
    src.insert("admin_role_names", role_name="editor", description="Edits personas")
    src.insert("administrator_roles", email="olivia@example.com", role_name="superuser")
    src.insert("administrator_roles", email="sam@example.com", role_name="editor")
    src.insert("administrator_resource_grants", email="sam@example.com", resource_type="agent",
               resource_id=str(LOLA))  # fmt: skip
    src.insert("agent_profile_photos", agent_telegram_id=LOLA, profile_photo_unique_id="AQADp1",
               source_media_unique_id="AgADai")  # fmt: skip


def run(src, **kwargs):
    return cw_state_import(mysql_url=src.url, state_dir=None, agent_names=[], **kwargs)


def test_every_created_and_date_field_arrives_as_the_right_utc_instant(agents, cw_source):
    lola, bernd = agents
    fill(cw_source)

    report = run(cw_source)

    memory = Memory.objects.get(entry_id="memory-la")
    assert memory.created == dt.datetime(2026, 1, 16, 2, 52, 19, tzinfo=UTC)  # 18:52:19 PST
    assert memory.extra == {"creation_channel_username": "@zoe"}
    assert Memory.objects.get(entry_id="memory-null").created is None
    assert Memory.objects.get(entry_id="memory-be").created == dt.datetime(2026, 6, 30, 22, 30, tzinfo=UTC)
    assert Plan.objects.get().created == dt.datetime(2026, 1, 16, 7, 30, tzinfo=UTC)
    assert Intention.objects.get().created == dt.datetime(2026, 1, 15, 15, tzinfo=UTC)
    summary = Summary.objects.get()
    assert summary.created == dt.datetime(2026, 1, 16, 4, tzinfo=UTC)
    assert (summary.first_message_date, summary.last_message_date) == (
        dt.date(2026, 1, 14),
        dt.date(2026, 1, 15),
    )
    assert Note.objects.get().created == dt.datetime(2026, 7, 1, 7, tzinfo=UTC)  # 09:00 CEST
    assert ScheduledEvent.objects.get().due_at == dt.datetime(2030, 1, 16, 17, tzinfo=UTC)  # time_utc is UTC
    logged = ActivityEvent.objects.get(agent=lola, data__table="task_execution_log")
    assert logged.created == dt.datetime(2026, 1, 16, 2, 52, 20, tzinfo=UTC)
    assert logged.data["task_identifier"] == "send-1a2b3c4d"

    examples = report.tables["memories"].time_examples
    assert examples == [
        "memories.created (Lola, America/Los_Angeles): 2026-01-15 18:52:19 -> 2026-01-16 02:52:19 UTC",
        "memories.created (Bernd, Europe/Berlin): 2026-07-01 00:30:00 -> 2026-06-30 22:30:00 UTC",
    ]


def test_a_dry_run_shows_each_converted_time(agents, cw_source, capsys):
    fill(cw_source)

    call_command("import_cw_state", "--mysql", cw_source.url, "--dry-run")

    out = capsys.readouterr().out
    assert "Times (the first value of each column and zone, as written -> as imported):" in out
    for line in (
        "memories.created (Lola, America/Los_Angeles): 2026-01-15 18:52:19 -> 2026-01-16 02:52:19 UTC",
        "plans.created (Lola, America/Los_Angeles): 2026-01-15 23:30:00 -> 2026-01-16 07:30:00 UTC",
        "intentions.created (Lola, America/Los_Angeles): 2026-01-15 07:00:00 -> 2026-01-15 15:00:00 UTC",
        "summaries.created (Lola, America/Los_Angeles): 2026-01-15 20:00:00 -> 2026-01-16 04:00:00 UTC",
        "notes.created (Bernd, Europe/Berlin): 2026-07-01 09:00:00 -> 2026-07-01 07:00:00 UTC",
    ):
        assert f"  {line}" in out, line
    assert not Memory.objects.exists()


def test_an_agent_without_a_timezone_uses_the_source_servers_zone(agents, cw_source):
    lola, _ = agents
    lola.timezone = ""
    lola.save()
    cw_source.insert("memories", id="m", agent_telegram_id=LOLA, content="x", created="2026-01-15 18:52:19")

    report = run(cw_source, source_timezone="Asia/Tokyo")

    assert Memory.objects.get().created == dt.datetime(2026, 1, 15, 9, 52, 19, tzinfo=UTC)
    assert report.tables["memories"].time_examples == [
        "memories.created (Lola, Asia/Tokyo (--source-timezone)): 2026-01-15 18:52:19 -> 2026-01-15 09:52:19 UTC"
    ]
    with pytest.raises(ValueError, match="--source-timezone 'Mars/Base': not an IANA zone"):
        run(cw_source, source_timezone="Mars/Base")


def test_a_schedule_with_one_bad_activity_keeps_the_others(agents, cw_source):
    lola, _ = agents
    fill(cw_source)

    report = run(cw_source)

    entries = list(
        ScheduleEntry.objects.filter(agent=lola).order_by("start").values_list("entry_id", "start")
    )
    assert entries == [
        ("act-school", dt.datetime(2026, 1, 16, 16, tzinfo=UTC)),
        ("act-sleep", dt.datetime(2026, 1, 17, 6, tzinfo=UTC)),
    ]
    [error] = report.tables["schedules"].errors
    assert error.startswith(f"schedules agent Lola ({LOLA}), activity 2 on 2026-01-16: (Homework) ")
    assert "half past never" in error and error.endswith("the other activities were imported")


def test_every_table_of_the_schema_is_named_in_the_report(agents, cw_source):
    fill(cw_source)

    text = "\n".join(run(cw_source).lines())

    for table in SCHEMA_TABLES:
        assert f"  {table}:" in text or f"  {table} (" in text, table
    assert "  administrator_resource_grants: 1 created" in text
    assert "agent_profile_photos (1 rows): not imported: the profile photos themselves are on each" in text


def test_staff_and_roles_become_django_users_and_groups_without_passwords(agents, cw_source):
    fill(cw_source)

    report = run(cw_source)

    users = get_user_model().objects.order_by("username")
    assert [(u.username, u.email, u.first_name, u.is_staff, u.is_superuser) for u in users] == [
        ("olivia@example.com", "olivia@example.com", "Olivia", True, True),
        ("sam@example.com", "sam@example.com", "Sam", True, False),
    ]
    assert not any(u.has_usable_password() for u in users)
    # Sam was limited to Lola: he operates her, and only her (agents.access).
    lola, bernd = agents
    sam = users.get(username="sam@example.com")
    assert set(sam.groups.values_list("name", flat=True)) == {"editor", "Operator"}
    assert set(Group.objects.values_list("name", flat=True)) == {"editor", "superuser", *ROLES}
    assert report.tables["administrator_roles"].counts["created"] == 2
    assert [(g.user, g.agent) for g in AgentGrant.objects.all()] == [(sam, lola)]
    assert list(agents_for(sam)) == [lola]
    assert not has_agent_perm(sam, "conversations.view_conversation", bernd)
    assert set(agents_for(users.get(username="olivia@example.com"))) == {lola, bernd}


def test_a_grant_of_something_other_than_an_agent_is_counted_as_skipped(agents, cw_source):
    fill(cw_source)
    cw_source.insert("administrator_resource_grants", email="sam@example.com", resource_type="prompt",
                     resource_id="Roleplay")  # fmt: skip

    report = run(cw_source)

    table = report.tables["administrator_resource_grants"]
    assert table.counts == {"created": 1, "skipped": 1}
    assert dict(table.skip_reasons) == {'resource_type "prompt": Cindy grants access to agents only': 1}


def test_a_second_run_reports_every_table_unchanged(agents, cw_source):
    fill(cw_source)
    run(cw_source)

    again = run(cw_source)

    assert again.changed == 0
    assert again.tables["media_metadata"].counts == {"unchanged": 2}
    assert not again.tables["media_metadata"].skip_reasons
    for table in again.tables.values():
        assert (
            "created" not in table.line() and "updated" not in table.line() and "skipped" not in table.line()
        )
    assert MediaDescription.objects.get(unique_id="AgADcurated").is_curated


def test_times_the_server_stamped_with_now_are_read_in_the_servers_zone(agents):
    lola, _ = agents
    report = TableReport("agent_activity")
    matcher = AgentMatcher.build(names=[], state_dir=None)
    importer = AgentActivityImporter(matcher=matcher, report=report, server_offset=dt.timedelta(hours=-8))
    row = {"id": 1, "agent_telegram_id": LOLA, "channel_telegram_id": 555,
           "last_send_time": dt.datetime(2026, 1, 15, 18, 0)}  # fmt: skip

    importer.run_row(row)

    assert ActivityEvent.objects.get(agent=lola).created == dt.datetime(2026, 1, 16, 2, tzinfo=UTC)
    assert report.time_examples == [
        "agent_activity.last_send_time (MySQL server time, UTC-08:00): 2026-01-15 18:00:00 -> 2026-01-16 02:00:00 UTC"
    ]
