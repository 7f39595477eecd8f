"""Memory benchmark: prompt size and assembly time against conversation length, with summaries, and
the share of the prompt that is a cacheable prefix over consecutive turns across summarization points.

1. For conversations of 100, 1,000 and 10,000 messages, summarized the way the engine does it (a
   summary over all but the newest KEEP_RECENT messages whenever SUMMARIZE_AFTER are unsummarized,
   the oldest CONSOLIDATE_BATCH merged whenever CONSOLIDATE_AT exist), it prints the prompt's size in
   characters and the median assembly time over RUNS runs (the lengths take turns within a run). Goal: both flat, the 10,000-message figure
   within 20% of the 1,000-message one.
2. Over TURNS consecutive turns of the 1,000-message conversation (a partner message and an agent
   reply per turn, summaries written when due), it prints the mean share of each prompt that is a
   prefix of the previous one (what providers can bill at the cached rate). Goal: at least 90%.

Run: .venv/bin/python bench/bench_memory.py
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

LENGTHS = (100, 1_000, 10_000)
RUNS = 31
TURNS = 200
FLAT_GOAL = 0.20
PREFIX_GOAL = 0.90
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SUMMARY_TEXT = (
    "Alice and the agent talked about bread: sourdough starters, rye flour, proofing times and the "
    "oven that runs hot. Alice promised to send a photo of her next loaf; the agent offered a recipe. "
) * 3


def make_agent():
    from agents.models import Agent, RolePrompt
    from memory.models import Memory

    agent = Agent.objects.create(
        name="Bench",
        phone="+15550000000",
        instructions="You are Bench, a friendly baker who talks to {user}.",
        timezone="Europe/Paris",
        role_prompt_names=["Chatbot"],
    )
    RolePrompt.objects.get_or_create(name="Chatbot", defaults={"text": "Keep answers short and warm. " * 40})
    for i in range(20):
        Memory.objects.create(agent=agent, kind="episodic", content=f"fact {i} about the bakery")
    return agent


def message(conversation, number: int):
    from conversations.models import Message

    partner = number % 2 == 1
    return Message(
        conversation=conversation,
        message_id=number,
        sender_id=4242 if partner else None,
        sender_name="Alice" if partner else "",
        is_agent=not partner,
        date=START + dt.timedelta(minutes=number),
        text=f"message {number}: let us talk about bread, flour and ovens for a while.",
    )


def summarize_when_due(conversation, last: int) -> bool:
    """Write summaries as the engine's summarization turns would (see conversations.services.summaries)."""
    from conversations.services.summaries import (
        CONSOLIDATE_AT,
        CONSOLIDATE_BATCH,
        KEEP_RECENT,
        SUMMARIZE_AFTER,
    )
    from memory.models import Summary

    rows = Summary.objects.filter(agent=conversation.agent, channel_id=conversation.peer_id)
    changed = False
    if rows.count() >= CONSOLIDATE_AT:
        batch = list(rows.order_by("first_message_id")[:CONSOLIDATE_BATCH])
        Summary.objects.create(
            agent=conversation.agent,
            channel_id=conversation.peer_id,
            content=SUMMARY_TEXT,
            first_message_id=batch[0].first_message_id,
            last_message_id=batch[-1].last_message_id,
            created=START,
        )
        Summary.objects.filter(pk__in=[s.pk for s in batch]).delete()
        changed = True
    covered = max((s.last_message_id for s in rows), default=0)
    if last - covered >= SUMMARIZE_AFTER:
        Summary.objects.create(
            agent=conversation.agent,
            channel_id=conversation.peer_id,
            content=SUMMARY_TEXT,
            first_message_id=covered + 1,
            last_message_id=last - KEEP_RECENT,
            created=START,
        )
        changed = True
    return changed


def conversation_of(length: int):
    from conversations.models import Conversation, Message

    agent = make_agent() if length == LENGTHS[0] else None
    from agents.models import Agent

    agent = agent or Agent.objects.get(name="Bench")
    conversation = Conversation.objects.create(agent=agent, peer_id=4000 + length, kind="dm", title="Alice")
    batch = []
    for number in range(1, length + 1):
        batch.append(message(conversation, number))
        if len(batch) == 50:
            Message.objects.bulk_create(batch)
            batch = []
            while summarize_when_due(conversation, number):
                pass
    Message.objects.bulk_create(batch)
    while summarize_when_due(conversation, length):
        pass
    return conversation


def measure(conversations: dict[int, object]) -> dict[int, tuple[int, float, float]]:
    """Prompt size and median assembly time per length: CPU time of this process (what the goal is
    judged on: other processes on a busy machine barely move it) and wall time. The lengths take
    turns within each run, so a busy machine slows them all alike."""
    from llm.prompt import TurnContext, build_plan_request
    from llm.prompt.metrics import serialize_request

    wall: dict[int, list[float]] = {length: [] for length in conversations}
    cpu: dict[int, list[float]] = {length: [] for length in conversations}
    sizes: dict[int, int] = {}
    for _ in range(RUNS):
        for length, conversation in conversations.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            request = build_plan_request(conversation, TurnContext(target_message_id=length))
            cpu[length].append(time.process_time() - started_cpu)
            wall[length].append(time.perf_counter() - started)
            sizes[length] = len(serialize_request(request))
    return {
        length: (sizes[length], statistics.median(cpu[length]), statistics.median(wall[length]))
        for length in conversations
    }


def prefix_share(conversation, last: int) -> tuple[float, float, int]:
    from cindy_site.clock import get_clock
    from conversations.models import Message
    from llm.prompt import TurnContext, build_plan_request
    from llm.prompt.metrics import serialize_request, shared_prefix_ratio

    clock = get_clock()
    previous = serialize_request(build_plan_request(conversation, TurnContext(target_message_id=last)))
    ratios, summarizations = [], 0
    for _ in range(TURNS):
        clock.advance(minutes=2)
        Message.objects.bulk_create([message(conversation, last + 1), message(conversation, last + 2)])
        last += 2
        summarizations += summarize_when_due(conversation, last)
        current = serialize_request(build_plan_request(conversation, TurnContext(target_message_id=last - 1)))
        ratios.append(shared_prefix_ratio(previous, current))
        previous = current
    return statistics.fmean(ratios), min(ratios), summarizations


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cindy-bench-") as tmp:
        setup_django(Path(tmp))
        from cindy_site.clock import FakeClock, set_clock
        from memory.models import Summary

        set_clock(FakeClock(START + dt.timedelta(days=30)))
        conversations = {length: conversation_of(length) for length in LENGTHS}
        figures = measure(conversations)
        for length, (size, seconds, wall) in figures.items():
            count = Summary.objects.filter(channel_id=conversations[length].peer_id).count()
            print(
                f"{length:>6,} messages ({count} summaries): prompt {size:>7,} characters, "
                f"assembly median {seconds * 1000:6.1f} ms CPU ({wall * 1000:6.1f} ms wall) over {RUNS} runs"
            )
        (size_1k, time_1k, _), (size_10k, time_10k, _) = figures[1_000], figures[10_000]
        conversation_1k = conversations[1_000]
        size_change, time_change = size_10k / size_1k - 1, time_10k / time_1k - 1
        for name, change in (("prompt size", size_change), ("assembly CPU time", time_change)):
            verdict = "met" if abs(change) <= FLAT_GOAL else "NOT met"
            print(
                f"{name} from 1,000 to 10,000 messages: {change:+.1%} (goal: within ±{FLAT_GOAL:.0%}; {verdict})"
            )
        mean, lowest, points = prefix_share(conversation_1k, 1_000)
        verdict = "met" if mean >= PREFIX_GOAL else "NOT met"
        print(
            f"cacheable prefix over {TURNS} consecutive turns ({points} summarization points): mean share "
            f"{mean:.1%}, lowest {lowest:.1%} (goal: mean >= {PREFIX_GOAL:.0%}; {verdict})"
        )


if __name__ == "__main__":
    main()
