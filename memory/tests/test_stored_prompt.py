"""The prompt budget for stored entries: what a request shows of a kind's entries, and what it reads."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from memory.models import Memory, Plan
from memory.services.stored import stored_entries_split
from memory.services.stored_prompt import BATCH, PREFIX_SHARE, entry_chars, stored_prompt_entries
from memory.stored_kinds import StoreContext

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def agent(db):
    return Agent.objects.create(name="Wendy", phone="+15550000001", instructions="You are Wendy.")


@pytest.fixture
def context(agent):
    return StoreContext(agent_id=agent.pk, channel_id=1001, channel_name="Alice")


def memories(agent, count: int, *, first: int = 0, text: str = "Alice likes rye bread and sourdough") -> None:
    """`count` memories, one a minute from START (+`first` minutes), each last changed when written."""
    Memory.objects.bulk_create(
        Memory(
            agent=agent,
            kind=Memory.Kind.EPISODIC,
            entry_id=f"memory-{i:05d}",
            content=f"{text} ({i})",
            created=START + dt.timedelta(minutes=i),
            creation_channel_id=1001,
            position=i,
        )
        for i in range(first, first + count)
    )
    Memory.objects.filter(agent=agent).update(updated=F("created"))


def ids(entries) -> list[str]:
    return [entry["id"] for entry in entries]


def test_entry_sizes_add_up_to_the_section_s_json_list(agent, context):
    memories(agent, 3)
    Plan.objects.create(agent=agent, channel_id=1001, plan_id="p1", content="Bake ✨ rye", created=START)
    for kind in ("remember", "plan"):
        entries = stored_prompt_entries(kind=kind, context=context, boundary=None, budget=0).older

        text = json.dumps(entries, ensure_ascii=False, indent=2)

        assert len(text) == sum(entry_chars(entry) for entry in entries) + 2


@pytest.mark.parametrize("count", [40, BATCH * 3])  # all rows in one query, and read batch by batch
def test_the_budget_holds_and_keeps_the_most_recent_entries(agent, context, count):
    memories(agent, count)
    budget = 2_000

    shown = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=budget)

    assert sum(entry_chars(entry) for entry in shown.older) <= budget * PREFIX_SHARE
    kept = len(shown.older)
    assert 0 < kept < count and shown.older_left_out == count - kept
    assert ids(shown.older) == [f"memory-{i:05d}" for i in range(count - kept, count)]


def test_a_memory_changed_lately_counts_as_used_and_the_kind_s_order_is_kept(agent, context):
    memories(agent, BATCH * 2)
    Memory.objects.filter(entry_id="memory-00003").update(updated=START + dt.timedelta(days=30))

    shown = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=1_000)

    assert ids(shown.older)[0] == "memory-00003"  # by position, the oldest first, as without a budget
    assert ids(shown.older)[1:] == sorted(ids(shown.older)[1:])
    assert ids(shown.older)[-1] == f"memory-{BATCH * 2 - 1:05d}"


def test_an_entry_too_long_for_what_is_left_is_skipped_and_shorter_ones_still_fit(agent, context):
    memories(agent, 5)
    Memory.objects.filter(entry_id="memory-00004").update(content="x" * 5_000)

    shown = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=1_000)

    assert "memory-00004" not in ids(shown.older) and "memory-00003" in ids(shown.older)
    assert shown.older_left_out >= 1


@pytest.mark.parametrize("count", [20, BATCH * 3])
def test_entries_written_since_the_boundary_use_what_the_older_ones_leave(agent, context, count):
    memories(agent, count)
    memories(agent, 3, first=10_000, text="Bubbles the starter is fine")
    boundary = START + dt.timedelta(days=2)

    shown = stored_prompt_entries(kind="remember", context=context, boundary=boundary, budget=3_000)

    assert ids(shown.newer) == ["memory-10000", "memory-10001", "memory-10002"]
    assert shown.newer_left_out == 0
    assert shown.older_left_out == count - len(shown.older)
    total = sum(entry_chars(entry) for entry in shown.older + shown.newer)
    assert total <= 3_000


def test_without_a_budget_every_entry_is_shown_as_before(agent, context):
    memories(agent, BATCH + 10)
    memories(agent, 2, first=10_000)
    boundary = START + dt.timedelta(days=2)

    shown = stored_prompt_entries(
        kind="remember", context=context, boundary=boundary, hide_foreign_ids=True, budget=0
    )

    older, newer = stored_entries_split(
        kind="remember", context=context, boundary=boundary, hide_foreign_ids=True
    )
    assert (shown.older, shown.newer) == (older, newer)
    assert (shown.older_left_out, shown.newer_left_out) == (0, 0)


def test_the_choice_does_not_depend_on_which_conversation_asks(agent, context):
    memories(agent, BATCH * 2)
    elsewhere = StoreContext(agent_id=agent.pk, channel_id=2002, channel_name="Bob")

    here = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=2_000)
    there = stored_prompt_entries(kind="remember", context=elsewhere, boundary=None, budget=2_000)

    assert [e["content"] for e in here.older] == [e["content"] for e in there.older]


def test_a_turn_reads_as_many_rows_at_10_000_memories_as_at_300(agent, context):
    def queries(count: int) -> list[str]:
        Memory.objects.all().delete()
        memories(agent, count)
        with CaptureQueriesContext(connection) as captured:
            shown = stored_prompt_entries(
                kind="remember", context=context, boundary=START + dt.timedelta(days=30), budget=4_000
            )
        assert shown.older_left_out == count - len(shown.older)
        return [q["sql"] for q in captured.captured_queries]

    few, many = queries(300), queries(10_000)

    assert len(few) == len(many)
    assert all("LIMIT" in sql or "COUNT" in sql for sql in many)
