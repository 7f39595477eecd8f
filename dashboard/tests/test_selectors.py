"""The dashboard's reads: their shapes and their query counts, which must not grow with the data."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from cindy_site.clock import now
from conversations.models import Conversation, TaskGraph, TaskNode
from conversations.services.activity import record_event
from dashboard import selectors
from dashboard.relay import Relay

pytestmark = pytest.mark.django_db


def _conversation_with_graph(agent, peer_id: int, *, nodes: int) -> Conversation:
    conversation = Conversation.objects.create(
        agent=agent, peer_id=peer_id, kind="dm", title=f"peer {peer_id}"
    )
    graph = TaskGraph.objects.create(conversation=conversation, created=now(), active_slot=conversation.pk)
    previous = None
    for sequence in range(nodes):
        node = TaskNode.objects.create(
            graph=graph,
            conversation=conversation,
            agent=agent,
            kind="send",
            sequence=sequence,
            params={"text": f"part {sequence}"},
            not_before=now(),
            created=now(),
        )
        if previous is not None:
            node.depends_on.add(previous)
        previous = node
    return conversation


def test_conversation_rows_cost_the_same_queries_for_many_conversations(
    sandbox_agent, django_assert_num_queries
):
    for peer_id in range(1, 6):
        _conversation_with_graph(sandbox_agent, peer_id, nodes=3)
    with django_assert_num_queries(5):
        rows = selectors.conversation_rows()
    assert len(rows) == 5
    assert [n["depends_on"] for n in rows[0]["graph"]["nodes"]] == [
        [],
        [rows[0]["graph"]["nodes"][0]["id"]],
        [rows[0]["graph"]["nodes"][1]["id"]],
    ]


def test_conversation_row_shows_the_newest_graph(sandbox_agent):
    conversation = _conversation_with_graph(sandbox_agent, 1, nodes=1)
    TaskGraph.objects.filter(conversation=conversation).update(status="cancelled", active_slot=None)
    newest = TaskGraph.objects.create(conversation=conversation, created=now(), trigger="reaction")
    row = selectors.conversation_row(conversation_id=conversation.pk)
    assert (row["graph"]["id"], row["graph"]["trigger"], row["graph"]["nodes"]) == (newest.pk, "reaction", [])


def test_events_after_reads_one_query_oldest_first(sandbox_agent, django_assert_num_queries):
    first = record_event("info", agent_id=sandbox_agent.pk, summary="one")
    record_event("info", agent_id=sandbox_agent.pk, summary="two")
    record_event("info", summary="three, no agent")
    with django_assert_num_queries(1):
        events = selectors.events_after(after_id=first.pk)
    assert [(e["summary"], e["agent"]) for e in events] == [("two", "Wendy"), ("three, no agent", "")]


@pytest.mark.django_db(transaction=True)  # the relay reads through database_sync_to_async
def test_relay_step_reports_whether_anything_was_new(sandbox_agent):
    relay = Relay()

    async def step() -> bool:
        return await relay.step()

    assert async_to_sync(step)() is False
    record_event("info", agent_id=sandbox_agent.pk, summary="new")
    assert async_to_sync(step)() is True
    assert async_to_sync(step)() is False


def test_agent_rows_say_when_an_asleep_agent_wakes(sandbox_agent, clock):
    import datetime as dt

    sandbox_agent.daily_schedule = "Asleep: 23:00-07:00"
    sandbox_agent.timezone = "UTC"
    sandbox_agent.save()
    night = dt.datetime(2026, 2, 1, 23, 30, tzinfo=dt.UTC)
    (row,) = selectors.agent_rows(at=night)
    assert row["asleep_until"] == "2026-02-02T07:00:00+00:00"
    (row,) = selectors.agent_rows(at=night.replace(hour=12))
    assert row["asleep_until"] is None


def test_agent_rows_show_the_current_activity_and_the_next_events(sandbox_agent, clock):
    import datetime as dt

    from memory.models import ScheduledEvent, ScheduleEntry

    at = clock.now()
    ScheduleEntry.objects.create(
        agent=sandbox_agent,
        activity="Baking",
        start=at - dt.timedelta(hours=1),
        end=at + dt.timedelta(hours=1),
        responsiveness=70,
        created=at,
    )
    for hours in (3, 1, 2, 4):
        ScheduledEvent.objects.create(
            agent=sandbox_agent,
            channel_id=5,
            intent=f"in {hours} h",
            time_raw=(at + dt.timedelta(hours=hours)).isoformat(),
            created=at,
        )
    (row,) = selectors.agent_rows(at=at)

    assert row["activity"]["name"] == "Baking" and row["activity"]["responsiveness"] == 70
    assert row["asleep_until"] is None
    assert [e["intent"] for e in row["next_events"]] == ["in 1 h", "in 2 h", "in 3 h"]


def test_an_agent_running_with_an_invalid_timezone_shows_a_notice_naming_the_value_and_the_fix(
    sandbox_agent, settings
):
    settings.TIME_ZONE = "UTC"
    sandbox_agent.timezone = "Mars/Base"
    sandbox_agent.source_file = "/srv/config/agents/Wendy.md"
    sandbox_agent.save()
    (row,) = selectors.agent_rows()
    (notice,) = row["notices"]
    assert notice.startswith('Agent Timezone "Mars/Base" is not an IANA zone')
    assert "use the site's TIME_ZONE (UTC)" in notice
    assert "# Agent Timezone in /srv/config/agents/Wendy.md" in notice

    sandbox_agent.timezone = "Europe/Paris"
    sandbox_agent.save()
    (row,) = selectors.agent_rows()
    assert row["notices"] == []
