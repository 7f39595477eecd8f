"""Stored-entries benchmark: per-turn CPU and prompt size against the number of global memories, under
the prompt budget for stored entries (CINDY_STORED_ENTRIES_BUDGET_CHARS), beside the figures without
it, measured in the same run.

1. For agents with 100, 1,000 and 10,000 memories (each with a 500-message conversation, the default
   window), it prints the median CPU time of this process to build one planning request (over RUNS
   runs, the agents and the modes taking turns within a run, so a busy machine slows them all alike),
   the request's size and the size of its `# Global Memories` entries, in three modes:
   - budget: the default budget;
   - no budget: CINDY_STORED_ENTRIES_BUDGET_CHARS=0, every memory in every prompt, as the original;
   - before: every memory read as a model object (`memory.services.stored.stored_entries_split`), the
     code this budget replaced;
   - with `--compare REV`, also "budget @REV": the default budget, filled by `memory/services/
     stored_prompt.py` as it was at git revision REV (loaded from git beside the current one), so a
     change to how the budget is filled is measured before and after in the same run.
   Goals: with the budget, CPU at 10,000 memories at most FLAT_GOAL times that at 100, and the memories
   within the budget.
2. Over TURNS consecutive turns of the 10,000-memory agent (a partner message per turn, and a new memory
   stored through the real path every REMEMBER_EVERY turns), the mean and lowest share of each request
   that is a prefix of the previous one. Goal: at least PREFIX_GOAL.

Run: .venv/bin/python bench/bench_prompt_entries.py [--runs N] [--compare REV]
It builds its own SQLite database in a temporary directory and touches nothing else.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_prompt import ROOT, setup_django  # noqa: E402

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


#: "budget @REV" modes: the revision's `stored_prompt_entries` (see `load_revision`).
REVISIONS: dict[str, object] = {}


def load_revision(revision: str):
    """`memory/services/stored_prompt.py` as it was at git revision `revision`, as a module of its own
    (the current one stays loaded): its `stored_prompt_entries`."""
    path = "memory/services/stored_prompt.py"
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{revision}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    name = f"stored_prompt_at_{revision}".replace("-", "_").replace("~", "_").replace("^", "_")
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:{path}", "exec"), module.__dict__)
    return module.stored_prompt_entries


def use_mode(mode: str, budget: int) -> None:
    from django.conf import settings

    import llm.prompt.sections as sections
    from memory.services.stored_prompt import stored_prompt_entries

    settings.CINDY_STORED_ENTRIES_BUDGET_CHARS = budget if mode.startswith("budget") else 0
    if mode == "before":
        sections.stored_prompt_entries = previous_entries
    else:
        sections.stored_prompt_entries = REVISIONS.get(mode, stored_prompt_entries)


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


def measure(
    conversations: dict[int, object], modes: tuple[str, ...], budget: int, runs: int
) -> dict[str, dict[int, tuple[float, int, int]]]:
    """Per mode and count: the median CPU, the request's size and its memories' size. The modes take
    turns within a run, as the agents do, so a change in the machine's load falls on all of them
    (only modes of like cost: one that builds 10,000 model objects leaves the heap to the next)."""
    from llm.prompt import TurnContext, build_plan_request
    from llm.prompt.metrics import serialize_request

    cpu: dict[str, dict[int, list[float]]] = {mode: {count: [] for count in conversations} for mode in modes}
    sizes: dict[str, dict[int, tuple[int, int]]] = {mode: {} for mode in modes}
    for _ in range(runs):
        for mode in modes:
            use_mode(mode, budget)
            for count, conversation in conversations.items():
                started = time.process_time()
                request = build_plan_request(conversation, TurnContext(target_message_id=HISTORY - 1))
                cpu[mode][count].append(time.process_time() - started)
                sizes[mode][count] = (len(serialize_request(request)), memories_chars(request))
    return {
        mode: {count: (statistics.median(cpu[mode][count]), *sizes[mode][count]) for count in conversations}
        for mode in modes
    }


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs per figure (default {RUNS})")
    parser.add_argument("--compare", metavar="REV", help="also fill the budget as git revision REV did")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cindy-bench-") as tmp:
        setup_django(Path(tmp))
        modes = MODES
        if args.compare:
            REVISIONS[f"budget @{args.compare}"] = load_revision(args.compare)
            modes = (MODES[0], *REVISIONS, *MODES[1:])
        from django.conf import settings

        from cindy_site.clock import FakeClock, set_clock

        budget = settings.CINDY_STORED_ENTRIES_BUDGET_CHARS
        set_clock(FakeClock(START + dt.timedelta(days=40)))
        conversations = {count: make_agent(count) for count in COUNTS}
        print(f"CINDY_STORED_ENTRIES_BUDGET_CHARS={budget:,}; median CPU of {args.runs} runs per figure")
        budgeted = tuple(mode for mode in modes if mode.startswith("budget"))
        figures = measure(conversations, budgeted, budget, args.runs)
        for mode in modes[len(budgeted) :]:
            figures |= measure(conversations, (mode,), budget, args.runs)
        width = max(len(mode) for mode in modes)
        for count in COUNTS:
            for mode in modes:
                seconds, size, memories = figures[mode][count]
                print(
                    f"{count:>6,} memories, {mode:<{width}}: {seconds * 1000:7.1f} ms CPU per turn, "
                    f"prompt {size:>9,} characters, memories {memories:>9,}"
                )
        for mode in (MODES[0], *REVISIONS):
            ratio = figures[mode][COUNTS[-1]][0] / figures[mode][COUNTS[0]][0]
            print(
                f"{mode}: CPU at {COUNTS[-1]:,} memories is {ratio:.2f}x that at {COUNTS[0]:,} "
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
