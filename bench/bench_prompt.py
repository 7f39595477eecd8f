"""Prompt assembly benchmark: time for a 500-message history, and the prefix consecutive turns share.

Over TURNS consecutive turns (one partner message each, on a 500-message history without summaries)
it prints the share of turns whose request keeps at least TARGET_RATIO of its text as a byte-identical
prefix of the previous turn's request (what providers bill at the cached rate); goal: GOAL_SHARE.
Two cases, each beside its figure from before, measured in the same run on a conversation of its own:

1. plain conversation: the ratio drops only when the start of the history window moves, once every
   CINDY_HISTORY_STEP messages (a quarter of the cap; before: 50 messages);
2. remember/plan: one reply in PLANNING_EVERY stores a `remember` (a new global memory) or a `plan`
   (alternately a new channel plan entry and an update of the newest one) through the real stored-kinds
   path (memory.services.stored.stored_entry_apply) before the next turn. Before: the previous order,
   every stored entry in the system instruction (`previous_order_request`), and the window step 50.

Run: .venv/bin/python bench/bench_prompt.py  (CINDY_HISTORY_STEP=... to try another step)
It builds its own SQLite database in a temporary directory and touches nothing else.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HISTORY = 500
RUNS = 10
TURNS = 200
TARGET_RATIO = 0.90
GOAL_SHARE = 0.99
PLANNING_EVERY = 5
PREVIOUS_STEP = 50


def setup_django(workdir: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "cindy_site.settings"
    os.environ["CINDY_ENV_FILE"] = os.devnull
    os.environ["CINDY_SQLITE_PATH"] = str(workdir / "bench.sqlite3")
    os.environ["CINDY_MEDIA_ROOT"] = str(workdir / "media")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def populate(index: int = 0):
    from agents.models import Agent, RolePrompt
    from conversations.models import Conversation, Message
    from media_catalog.models import MediaDescription, Sticker, StickerSet
    from memory.models import Memory

    agent = Agent.objects.create(
        name=f"Bench{index or ''}",
        phone=f"+1555000000{index}",
        instructions="You are Bench, a friendly baker who talks to {user}.",
        timezone="Europe/Paris",
        role_prompt_names=["Chatbot"],
        sticker_set_names=["BenchSet"],
    )
    RolePrompt.objects.get_or_create(name="Chatbot", defaults={"text": "Keep answers short and warm. " * 40})
    sticker_set, created = StickerSet.objects.get_or_create(short_name="BenchSet")
    for i in range(40 if created else 0):
        Sticker.objects.create(sticker_set=sticker_set, name=f"s{i}", unique_id=f"BS{i}", position=i)
        MediaDescription.objects.create(unique_id=f"BS{i}", kind="sticker", description=f"sticker number {i}")
    conversation = Conversation.objects.create(agent=agent, peer_id=4242, kind="dm", title="Alice")
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for i in range(20):
        Memory.objects.create(agent=agent, kind="curated", partner_id=4242, content=f"fact {i} about Alice")
        Memory.objects.create(
            agent=agent,
            kind="episodic",
            content=f"earlier memory {i}: a customer liked the seeded rye",
            created=start - dt.timedelta(days=30 - i),
        )
    rows = []
    for i in range(1, HISTORY + 1):
        media = []
        if i % 25 == 0:
            media = [
                {
                    "kind": "media",
                    "media_kind": "sticker",
                    "unique_id": f"BS{i % 40}",
                    "sticker_set_name": "BenchSet",
                    "sticker_name": f"s{i % 40}",
                }
            ]
        rows.append(
            Message(
                conversation=conversation,
                message_id=i,
                sender_id=None if i % 2 == 0 else 4242,
                sender_name="" if i % 2 == 0 else "Alice",
                is_agent=i % 2 == 0,
                date=start + dt.timedelta(minutes=i),
                text=f"message {i}: let us talk about bread, flour and ovens for a while.",
                media=media,
            )
        )
    Message.objects.bulk_create(rows)
    return conversation, start + dt.timedelta(minutes=HISTORY)


def previous_order_request(conversation, turn):
    """The request in the previous order: every stored entry in the system instruction (before the
    history), whenever it was written."""
    from cindy_site.clock import now
    from llm.conversation import conversation_history
    from llm.prompt.builder import final_turn, history_turns, system_instruction
    from llm.request import LLMRequest

    turns = history_turns(conversation_history(conversation))
    return LLMRequest(
        system=system_instruction(conversation), turns=[*turns, final_turn(conversation, turn, at=now())]
    )


def apply_reply_task(conversation, number: int) -> None:
    """The stored task of every PLANNING_EVERY-th reply, through the real stored-kinds path: remember
    and plan in turn; a plan alternately adds an entry and updates the newest one."""
    from memory.models import Plan
    from memory.services.stored import stored_entry_apply
    from memory.stored_kinds import StoreContext

    context = StoreContext(
        agent_id=conversation.agent_id, channel_id=conversation.peer_id, channel_name="Alice"
    )
    if number % 2:
        stored_entry_apply(
            kind="remember", context=context, entry_id=None, content=f"Alice said something new ({number})"
        )
        return
    newest = Plan.objects.filter(agent_id=conversation.agent_id, channel_id=conversation.peer_id)
    newest = newest.order_by("-created", "-id").values_list("plan_id", flat=True).first()
    entry_id = newest if number % 4 == 0 and newest else None
    stored_entry_apply(
        kind="plan", context=context, entry_id=entry_id, content=f"Ask Alice about rye ({number})"
    )


def run_turns(conversation, build, *, planning: bool) -> list[float]:
    """TURNS consecutive turns, each one partner message later; the ratio of each request to the one
    before. With `planning`, every PLANNING_EVERY-th reply stores a remember or plan task."""
    from cindy_site.clock import get_clock
    from conversations.models import Message
    from llm.prompt import TurnContext
    from llm.prompt.metrics import serialize_request, shared_prefix_ratio

    clock = get_clock()
    previous = serialize_request(build(conversation, TurnContext(target_message_id=HISTORY - 1)))
    ratios = []
    for step in range(1, TURNS + 1):
        clock.advance(minutes=2)
        Message.objects.create(
            conversation=conversation,
            message_id=HISTORY + step,
            sender_id=4242,
            sender_name="Alice",
            date=clock.now(),
            text=f"and one more thing about rye ({step})",
        )
        current = serialize_request(build(conversation, TurnContext(target_message_id=HISTORY + step)))
        ratios.append(shared_prefix_ratio(previous, current))
        previous = current
        if planning and step % PLANNING_EVERY == 0:
            apply_reply_task(conversation, step // PLANNING_EVERY)
    return ratios


def on_target(ratios: list[float]) -> int:
    return sum(ratio >= TARGET_RATIO for ratio in ratios)


def report(label: str, now: list[float], before: list[float], before_how: str) -> None:
    hits, hits_before = on_target(now), on_target(before)
    verdict = "meets" if hits / TURNS >= GOAL_SHARE else "MISSES"
    print(
        f"{label}: turns at or above {TARGET_RATIO:.2f}: {hits}/{TURNS} ({hits / TURNS:.1%}); goal ≥ {GOAL_SHARE:.0%}, "
        f"{verdict} (before, {before_how}: {hits_before}/{TURNS} ({hits_before / TURNS:.1%}); "
        f"{hits / max(1, hits_before):.2f}x the turns on target); median ratio {statistics.median(now):.4f}, "
        f"lowest {min(now):.4f} (before: {statistics.median(before):.4f}, {min(before):.4f})"
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cindy-bench-") as tmp:
        setup_django(Path(tmp))
        from django.test.utils import override_settings

        from cindy_site.clock import FakeClock, set_clock
        from llm.conversation import history_step
        from llm.prompt import TurnContext, build_plan_request
        from llm.prompt.metrics import serialize_request

        conversations = [populate(index) for index in range(4)]
        last = conversations[0][1]
        set_clock(FakeClock(last + dt.timedelta(minutes=1)))
        conversation = conversations[0][0]

        timings = []
        for _ in range(RUNS):
            started = time.process_time()
            first = build_plan_request(conversation, TurnContext(target_message_id=HISTORY - 1))
            timings.append(time.process_time() - started)
        step = history_step()
        plain = run_turns(conversation, build_plan_request, planning=False)
        planning = run_turns(conversations[1][0], build_plan_request, planning=True)
        with override_settings(CINDY_HISTORY_STEP=PREVIOUS_STEP):
            plain_before = run_turns(conversations[2][0], build_plan_request, planning=False)
            planning_before = run_turns(conversations[3][0], previous_order_request, planning=True)

        print(f"history messages in prompt: {len(first.turns) - 1}")
        print(f"prompt size: {len(serialize_request(first)):,} characters")
        print(
            f"prompt assembly time ({HISTORY}-message history): median "
            f"{statistics.median(timings) * 1000:.1f} ms CPU, min {min(timings) * 1000:.1f} ms over {RUNS} runs"
        )
        print(
            f"{TURNS} consecutive turns; the history window start moves once every {step} messages "
            f"(before: {PREVIOUS_STEP})"
        )
        report("plain conversation", plain, plain_before, f"window step {PREVIOUS_STEP}")
        report(
            f"1 reply in {PLANNING_EVERY} stores a remember or plan",
            planning,
            planning_before,
            f"every stored entry before the history, window step {PREVIOUS_STEP}",
        )


if __name__ == "__main__":
    main()
