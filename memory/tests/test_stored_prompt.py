"""The prompt budget for stored entries: what a request shows of a kind's entries, and what it reads."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from memory.models import Memory, Plan
from memory.services import stored_prompt
from memory.services.stored import stored_entries_split
from memory.services.stored_prompt import BATCH, MISSES, PREFIX_SHARE, entry_chars, stored_prompt_entries
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


def the_rule(agent, context, budget: int) -> tuple[list[str], int]:
    """What `_fill` documents, over every row at once: going down the recency ranking, keep each entry
    that fits in what is left, until the budget is full or MISSES rows in a row did not fit."""
    every = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=0).older
    sizes = {entry["id"]: entry_chars(entry) for entry in every}
    kept, used, misses = [], 0, 0
    for memory in Memory.objects.filter(agent=agent).order_by("-updated", "-pk"):
        if used >= budget or misses >= MISSES:
            break
        cost = sizes[memory.entry_id]
        if used + cost <= budget:
            kept.append(memory.entry_id)
            used, misses = used + cost, 0
        else:
            misses += 1
    return sorted(kept), Memory.objects.filter(agent=agent).count() - len(kept)


def test_the_choice_is_the_rule_s_however_the_rows_are_read(agent, context, monkeypatch):
    memories(agent, 60)
    # Every fifth memory is too long for the budget's last part: a miss, and shorter ones still fit.
    for i in range(0, 60, 5):
        Memory.objects.filter(entry_id=f"memory-{i:05d}").update(content="y" * 300)
    # Far down the ranking, past the misses that end the search, one that would still fit.
    Memory.objects.filter(entry_id="memory-00002").update(content="ok")
    budget = 3_000

    shown = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=budget)
    monkeypatch.setattr(stored_prompt, "BATCH", 3)  # the first query 10 rows, then 3 at a time
    monkeypatch.setattr(stored_prompt, "ENTRY_GUESS", 10**9)
    with CaptureQueriesContext(connection) as captured:
        small = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=budget)

    assert len(captured.captured_queries) > 3
    assert shown == small
    every = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=0).older
    left = int(budget * PREFIX_SHARE) - sum(entry_chars(entry) for entry in shown.older)
    assert entry_chars(next(e for e in every if e["id"] == "memory-00002")) <= left
    assert "memory-00002" not in ids(shown.older)
    assert (sorted(ids(shown.older)), shown.older_left_out) == the_rule(
        agent, context, int(budget * PREFIX_SHARE)
    )


@pytest.mark.parametrize("long_ones", [MISSES - 1, MISSES])
def test_it_stops_looking_after_misses_rows_in_a_row_that_do_not_fit(agent, context, long_ones):
    memories(agent, 1, text="short")
    # The most recent ones, each too long for the whole budget.
    memories(agent, long_ones, first=1, text="z" * 2_000)

    shown = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=1_000)

    assert ids(shown.older) == (["memory-00000"] if long_ones < MISSES else [])
    assert shown.older_left_out == long_ones + 1 - len(shown.older)


def test_a_full_budget_reads_misses_rows_past_it_not_a_batch(agent, context):
    memories(agent, 1_000)

    with CaptureQueriesContext(connection) as captured:
        shown = stored_prompt_entries(kind="remember", context=context, boundary=None, budget=30_000)

    ranked = [q["sql"] for q in captured.captured_queries if "ORDER BY" in q["sql"]]
    read = sum(int(re.search(r"LIMIT (\d+)", sql).group(1)) for sql in ranked)
    assert BATCH < len(shown.older) <= read <= len(shown.older) + 2 * MISSES
    assert shown.older_left_out == 1_000 - len(shown.older)


def test_a_kind_of_batch_rows_is_read_in_one_query(agent, context):
    memories(agent, BATCH)

    with CaptureQueriesContext(connection) as captured:
        shown = stored_prompt_entries(
            kind="remember", context=context, boundary=START + dt.timedelta(days=30), budget=30_000
        )

    assert len(captured.captured_queries) == 1
    assert (len(shown.older), shown.older_left_out) == (BATCH, 0)


@pytest.mark.parametrize("count", [20, BATCH * 3])  # every row in one query, and the newer ones queried
def test_entries_written_since_the_boundary_are_kept_newest_written_first(agent, context, count):
    memories(agent, count)
    memories(agent, 3, first=10_000, text="Bubbles the starter is fine, " * 4)
    # Changed last, but written before the other two: the newest written are kept.
    Memory.objects.filter(entry_id="memory-10000").update(updated=START + dt.timedelta(days=60))
    boundary = START + dt.timedelta(days=2)

    shown = stored_prompt_entries(kind="remember", context=context, boundary=boundary, budget=2_000)

    assert ids(shown.newer) == ["memory-10001", "memory-10002"]
    assert shown.newer_left_out == 1
