"""Planning requests under the prompt budget for stored entries (CINDY_STORED_ENTRIES_BUDGET_CHARS)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db.models import F

from llm.prompt import TurnContext, build_plan_request
from llm.prompt.metrics import serialize_request, shared_prefix_ratio
from llm.tests.conftest import START, add_message
from memory.models import Memory
from memory.services.stored import stored_entry_apply
from memory.stored_kinds import StoreContext


@pytest.fixture
def many_memories(agent, dm, settings):
    """400 global memories written a day before the conversation began, and a 20-message history."""
    settings.CINDY_STORED_ENTRIES_BUDGET_CHARS = 40_000
    Memory.objects.bulk_create(
        Memory(
            agent=agent,
            kind=Memory.Kind.EPISODIC,
            entry_id=f"memory-{i:05d}",
            content=f"Memory {i}: Alice told me about her bakery and the oven that runs hot.",
            created=START - dt.timedelta(days=1, minutes=400 - i),
            creation_channel_id=dm.peer_id,
            position=i,
        )
        for i in range(400)
    )
    Memory.objects.filter(agent=agent).update(updated=F("created"))
    for i in range(1, 21):
        add_message(dm, i, f"message number {i} about bread and flour", is_agent=i % 2 == 0)
    return agent


def test_the_memories_section_stays_within_the_budget_and_says_how_many_more_exist(many_memories, dm):
    system = build_plan_request(dm, TurnContext(target_message_id=19)).system

    section = system[system.index("# Global Memories") :]
    section = section[: section.index("\n```\n") + 4]
    assert len(section) <= 40_000
    assert "Memory 399:" in system and "Memory 0:" not in system
    shown = section.count('"id": "memory-')
    assert f"{400 - shown:,} more entries are stored but not shown here" in system


def test_curated_memories_always_stay_whatever_the_budget(many_memories, dm, settings):
    settings.CINDY_STORED_ENTRIES_BUDGET_CHARS = 1
    Memory.objects.create(
        agent=many_memories, kind="curated", partner_id=dm.peer_id, content="Alice loves rye"
    )

    system = build_plan_request(dm, TurnContext(target_message_id=19)).system

    assert "# Curated Memories" in system and "Alice loves rye" in system
    assert "Memory 399:" not in system and "400 more entries are stored" in system


def test_consecutive_turns_share_at_least_95_percent_while_memories_are_written(many_memories, dm, clock):
    """Each turn a partner message arrives, and every third turn the agent remembers something first.
    The kept memories do not move, so everything before the history stays byte for byte the same; a
    turn without a new memory shares at least 95% of the previous request (one with a new memory
    changes the recent entries after the history, as without a budget)."""
    context = StoreContext(agent_id=many_memories.pk, channel_id=dm.peer_id, channel_name="Alice")
    clock.advance(hours=1)
    previous = build_plan_request(dm, TurnContext(target_message_id=20))
    ratios = []
    for turn in range(21, 33):
        clock.advance(minutes=2)
        add_message(dm, turn, f"message number {turn} about rye", date=clock.now())
        remembered = turn % 3 == 0
        if remembered:
            stored_entry_apply(kind="remember", context=context, entry_id=None, content=f"Alice said {turn}")
        current = build_plan_request(dm, TurnContext(target_message_id=turn))
        assert current.system == previous.system
        if not remembered:
            ratios.append(shared_prefix_ratio(serialize_request(previous), serialize_request(current)))
        previous = current

    assert min(ratios) >= 0.95, ratios
    assert "Alice said 30" in previous.turns[-2].parts[0].text  # the recent entries, after the history


def test_without_a_budget_every_memory_is_in_every_prompt(many_memories, dm, settings):
    settings.CINDY_STORED_ENTRIES_BUDGET_CHARS = 0

    system = build_plan_request(dm, TurnContext(target_message_id=19)).system

    assert all(f"Memory {i}:" in system for i in (0, 200, 399))
    assert "more entries are stored" not in system
