"""Stored-entries benchmark: per-turn CPU and prompt size against the number of global memories, under
the prompt budget for stored entries (CINDY_STORED_ENTRIES_BUDGET_CHARS), beside the figures without
it, measured in the same run.

1. For agents with 100, 1,000 and 10,000 memories (each with a 500-message conversation, the default
   window), it prints the median CPU time of this process to build one planning request (over RUNS runs, the agents taking
   turns within a run, so a busy machine slows them all alike), the request's size and the size of its
   `# Global Memories` entries, in three modes:
   - budget: the default budget;
   - no budget: CINDY_STORED_ENTRIES_BUDGET_CHARS=0, every memory in every prompt, as the original;
   - before: every memory read as a model object (`memory.services.stored.stored_entries_split`), the
     code this budget replaced.
   Goals: with the budget, CPU at 10,000 memories at most FLAT_GOAL times that at 100, and the memories
   within the budget.
2. Over TURNS consecutive turns of the 10,000-memory agent (a partner message per turn, and a new memory
   stored through the real path every REMEMBER_EVERY turns), the mean and lowest share of each request
   that is a prefix of the previous one. Goal: at least PREFIX_GOAL.

Run: .venv/bin/python bench/bench_prompt_entries.py
It builds its own SQLite database in a temporary directory and touches nothing else.
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_prompt import setup_django  # noqa: E402

COUNTS = (100, 1_000, 10_000)
RUNS = 11
TURNS = 100
REMEMBER_EVERY = 5
HISTORY = 500  # the default CINDY_HISTORY_SIZE: a full window, as a running agent has
FLAT_GOAL = 1.5
PREFIX_GOAL = 0.95
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
MODES = ("budget", "no budget", "before")


def make_agent(count: int):
    """An agent with `count` global memories, all written before its conversation's history."""
    from django.db.models import F

    from agents.models import Agent
    from conversations.models import Conversation, Message
    from memory.models import Memory

    agent = Agent.objects.create(
        name=f"Bench{count}",
        phone=f"+1555{count:07d}",
        instructions="You are Bench, a friendly baker who talks to {user}.",
        timezone="Europe/Paris",
    )
    Memory.objects.bulk_create(
        Memory(
            agent=agent,
            kind=Memory.Kind.EPISODIC,
            entry_id=f"memory-{i:08x}",
            content=f"Memory {i}: Alice told me about her bakery, the rye starter and the oven that runs hot.",
            created=START + dt.timedelta(minutes=i),
            creation_channel="Alice",
            creation_channel_id=4242,
            position=i,
        )
        for i in range(count)
    )
    # bulk_create stamps every row with the same `updated`: spread them as if written over time.
    Memory.objects.filter(agent=agent).update(updated=F("created"))
    conversation = Conversation.objects.create(agent=agent, peer_id=4242, kind="dm", title="Alice")
    began = START + dt.timedelta(days=30)
    Message.objects.bulk_create(message(conversation, number, began) for number in range(1, HISTORY + 1))
    return conversation


def message(conversation, number: int, began: dt.datetime):
    from conversations.models import Message

    partner = number % 2 == 1
    return Message(
        conversation=conversation,
        message_id=number,
        sender_id=4242 if partner else None,
        sender_name="Alice" if partner else "",
        is_agent=not partner,
        date=began + dt.timedelta(minutes=number),
        text=f"message {number}: let us talk about bread, flour and ovens for a while.",
    )


def previous_entries(*, kind, context, boundary, hide_foreign_ids=False, budget=None):
    """The code the budget replaced: every entry, read as model objects."""
    from memory.services.stored import stored_entries_split
    from memory.services.stored_prompt import PromptEntries

    older, newer = stored_entries_split(
        kind=kind, context=context, boundary=boundary, hide_foreign_ids=hide_foreign_ids
    )
    return PromptEntries(older, newer)


def use_mode(mode: str, budget: int) -> None:
    from django.conf import settings

    import llm.prompt.sections as sections
    from memory.services.stored_prompt import stored_prompt_entries

    settings.CINDY_STORED_ENTRIES_BUDGET_CHARS = budget if mode == "budget" else 0
    sections.stored_prompt_entries = previous_entries if mode == "before" else stored_prompt_entries


def memories_chars(request) -> int:
    """The characters of the `# Global Memories` entries (heading and the left-out line excluded)."""
    text = request.system
    start = text.find("# Global Memories")
    if start < 0:
        return 0
    block = text[start:]
    opening = block.find("```json\n")
    closing = block.find("\n```", opening + 8)
    return closing - opening - len("```json\n[\n") - len("\n]") if opening >= 0 else 0


def measure(conversations: dict[int, object], mode: str, budget: int) -> dict[int, tuple[float, int, int]]:
    from llm.prompt import TurnContext, build_plan_request
    from llm.prompt.metrics import serialize_request

    use_mode(mode, budget)
    cpu: dict[int, list[float]] = {count: [] for count in conversations}
    sizes: dict[int, tuple[int, int]] = {}
    for _ in range(RUNS):
        for count, conversation in conversations.items():
            started = time.process_time()
            request = build_plan_request(conversation, TurnContext(target_message_id=HISTORY - 1))
            cpu[count].append(time.process_time() - started)
            sizes[count] = (len(serialize_request(request)), memories_chars(request))
    return {count: (statistics.median(cpu[count]), *sizes[count]) for count in conversations}


def prefix_share(conversation, budget: int) -> tuple[float, float]:
    from cindy_site.clock import get_clock
    from conversations.models import Message
    from llm.prompt import TurnContext, build_plan_request
    from llm.prompt.metrics import serialize_request, shared_prefix_ratio
    from memory.services.stored import stored_entry_apply
    from memory.stored_kinds import StoreContext

    use_mode("budget", budget)
    clock = get_clock()
    context = StoreContext(
        agent_id=conversation.agent_id, channel_id=conversation.peer_id, channel_name="Alice"
    )
    last = HISTORY
    previous = serialize_request(build_plan_request(conversation, TurnContext(target_message_id=last)))
    ratios = []
    for turn in range(TURNS):
        clock.advance(minutes=2)
        last += 1
        Message.objects.create(
            conversation=conversation,
            message_id=last,
            sender_id=4242,
            sender_name="Alice",
            date=clock.now(),
            text=f"message {last}: and what about rye?",
        )
        if turn % REMEMBER_EVERY == 0:
            stored_entry_apply(kind="remember", context=context, entry_id=None, content=f"Alice said {last}")
        current = serialize_request(build_plan_request(conversation, TurnContext(target_message_id=last)))
        ratios.append(shared_prefix_ratio(previous, current))
        previous = current
    return statistics.fmean(ratios), min(ratios)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cindy-bench-") as tmp:
        setup_django(Path(tmp))
        from django.conf import settings

        from cindy_site.clock import FakeClock, set_clock

        budget = settings.CINDY_STORED_ENTRIES_BUDGET_CHARS
        set_clock(FakeClock(START + dt.timedelta(days=40)))
        conversations = {count: make_agent(count) for count in COUNTS}
        print(f"CINDY_STORED_ENTRIES_BUDGET_CHARS={budget:,}; median CPU of {RUNS} runs per figure")
        figures = {mode: measure(conversations, mode, budget) for mode in MODES}
        for count in COUNTS:
            for mode in MODES:
                seconds, size, memories = figures[mode][count]
                print(
                    f"{count:>6,} memories, {mode:<9}: {seconds * 1000:7.1f} ms CPU per turn, "
                    f"prompt {size:>9,} characters, memories {memories:>9,}"
                )
        low, high = figures["budget"][COUNTS[0]], figures["budget"][COUNTS[-1]]
        ratio = high[0] / low[0]
        print(
            f"budget: CPU at {COUNTS[-1]:,} memories is {ratio:.2f}x that at {COUNTS[0]:,} "
            f"(goal: at most {FLAT_GOAL}x; {'met' if ratio <= FLAT_GOAL else 'NOT met'})"
        )
        largest = max(memories for _, _, memories in figures["budget"].values())
        print(
            f"budget: largest memories section {largest:,} characters "
            f"(goal: within {budget:,}; {'met' if largest <= budget else 'NOT met'})"
        )
        mean, lowest = prefix_share(conversations[COUNTS[-1]], budget)
        print(
            f"budget: over {TURNS} turns at {COUNTS[-1]:,} memories (a new memory every {REMEMBER_EVERY} "
            f"turns), shared prefix mean {mean:.1%}, lowest {lowest:.1%} "
            f"(goal: at least {PREFIX_GOAL:.0%}; {'met' if mean >= PREFIX_GOAL else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
