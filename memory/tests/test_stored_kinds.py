"""The shared stored-kind path: create / update / delete by id, and a new kind plugged in by declaration."""

from __future__ import annotations

import datetime as dt

import pytest

from agents.models import Agent
from memory import stored_kinds
from memory.models import Memory, Plan, Summary
from memory.services.stored import (
    StoredOutcome,
    outcomes_summary,
    parse_created,
    stored_entries,
    stored_entry_apply,
)
from memory.stored_kinds import StoreContext, StoredKind, StoredParam

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(db):
    return Agent.objects.create(name="Wendy", phone="+15550000001", instructions="You are Wendy.")


@pytest.fixture
def context(agent):
    return StoreContext(agent_id=agent.pk, channel_id=1001, channel_name="Alice")


def test_a_new_id_creates_the_same_id_updates_and_empty_content_deletes(context):
    created = stored_entry_apply(kind="plan", context=context, entry_id="p1", content=" Bake bread ")
    updated = stored_entry_apply(kind="plan", context=context, entry_id="p1", content="Bake rye")
    assert (created.action, updated.action) == ("created", "updated")
    assert list(Plan.objects.values_list("plan_id", "content")) == [("p1", "Bake rye")]
    deleted = stored_entry_apply(kind="plan", context=context, entry_id="p1", content="")
    again = stored_entry_apply(kind="plan", context=context, entry_id="p1", content="")
    assert (deleted.action, again.action) == ("deleted", "absent")
    assert not Plan.objects.exists()


def test_without_an_id_an_entry_gets_a_fresh_one(context):
    outcome = stored_entry_apply(kind="remember", context=context, entry_id=None, content="Likes rye")
    memory = Memory.objects.get()
    assert outcome.entry_id == memory.entry_id and memory.entry_id.startswith("memory-")
    assert (memory.creation_channel, memory.creation_channel_id) == ("Alice", 1001)


def test_an_update_keeps_where_the_entry_was_made_and_when(agent, context, clock):
    stored_entry_apply(kind="remember", context=context, entry_id="m", content="Has a cat")
    created = Memory.objects.get().created
    clock.advance(3600)
    elsewhere = StoreContext(agent_id=agent.pk, channel_id=2002, channel_name="Bob")
    stored_entry_apply(kind="remember", context=elsewhere, entry_id="m", content="Has two cats")
    memory = Memory.objects.get()
    assert (memory.content, memory.created, memory.creation_channel_id) == ("Has two cats", created, 1001)


def test_remember_does_not_touch_curated_memories_with_the_same_id(agent, context):
    Memory.objects.create(
        agent=agent, kind=Memory.Kind.CURATED, partner_id=1001, entry_id="m", content="file"
    )
    stored_entry_apply(kind="remember", context=context, entry_id="m", content="")
    assert Memory.objects.get().content == "file"


def test_created_is_parsed_when_it_can_be_and_always_kept_as_written(context):
    stored_entry_apply(
        kind="remember", context=context, entry_id="a", content="x", created="2025-01-26 14:30:15 UTC"
    )
    memory = Memory.objects.get()
    assert memory.created == dt.datetime(2025, 1, 26, 14, 30, 15, tzinfo=dt.UTC)
    assert memory.created_raw == "2025-01-26 14:30:15 UTC"
    assert parse_created("2025-01-15") == dt.datetime(2025, 1, 15, tzinfo=dt.UTC)
    assert parse_created("2025-01-15T10:00:00+02:00").utcoffset() == dt.timedelta(hours=2)
    assert parse_created("next tuesday") is None


def test_prompt_entries_carry_their_ids(context):
    stored_entry_apply(kind="plan", context=context, entry_id="p1", content="Bake")
    assert [e["id"] for e in stored_entries(kind="plan", context=context)] == ["p1"]


@pytest.fixture
def summary_kind():
    """A kind declared only by its model, field mapping and prompt section, as a new feature would."""
    saved = dict(stored_kinds._REGISTRY)
    spec = stored_kinds.register(
        StoredKind(
            kind="summarize",
            model=Summary,
            id_prefix="summary",
            scope=lambda context: {"agent_id": context.agent_id, "channel_id": context.channel_id},
            params=(StoredParam("min_message_id", "first_message_id", "int"),),
            section_title="Conversation Summary",
            section_entry=lambda row: {"id": row.entry_id, "content": row.content},
        )
    )
    yield spec
    stored_kinds._REGISTRY.clear()
    stored_kinds._REGISTRY.update(saved)


def test_a_kind_plugs_in_by_declaration_alone(context, summary_kind):
    outcome = stored_entry_apply(
        kind="summarize", context=context, entry_id="s1", content="They met", params={"min_message_id": 7}
    )
    summary = Summary.objects.get()
    assert (outcome.action, summary.entry_id, summary.first_message_id) == ("created", "s1", 7)
    assert stored_entries(kind="summarize", context=context) == [{"id": "s1", "content": "They met"}]


def test_the_activity_line_names_one_entry_by_id_and_counts_several_per_kind(context):
    outcomes = [
        stored_entry_apply(kind="plan", context=context, entry_id="p1", content="Bake bread"),
        stored_entry_apply(kind="note", context=context, entry_id="n1", content="Likes rye"),
        stored_entry_apply(kind="note", context=context, entry_id="n2", content="Moved to Leeds"),
        stored_entry_apply(kind="note", context=context, entry_id="n1", content=""),
        stored_entry_apply(kind="note", context=context, entry_id="n9", content=""),
    ]
    assert outcomes_summary(outcomes) == "plan p1 created, 4 note entries (2 created, 1 deleted, 1 absent)"
    assert outcomes_summary(outcomes[1:3]) == "2 note entries"
    # The node's result keeps each outcome as a line; read back, it counts the same.
    lines = [outcome.describe() for outcome in outcomes]
    assert outcomes_summary(StoredOutcome.from_text(line) for line in lines) == outcomes_summary(outcomes)
