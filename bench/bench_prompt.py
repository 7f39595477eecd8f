"""Prompt assembly benchmark: time for a 500-message history, and the prefix two turns share.

Over TURNS consecutive turns it prints the median and lowest shared-prefix ratio and the share of
turns at or above TARGET_RATIO: the ratio drops once every CINDY_HISTORY_STEP turns, when the start
of the history window moves (docs/llm.md).

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


def populate():
    from agents.models import Agent, RolePrompt
    from conversations.models import Conversation, Message
    from media_catalog.models import MediaDescription, Sticker, StickerSet
    from memory.models import Memory

    agent = Agent.objects.create(
        name="Bench",
        phone="+15550000000",
        instructions="You are Bench, a friendly baker who talks to {user}.",
        timezone="Europe/Paris",
        role_prompt_names=["Chatbot"],
        sticker_set_names=["BenchSet"],
    )
    RolePrompt.objects.create(name="Chatbot", text="Keep answers short and warm. " * 40)
    sticker_set = StickerSet.objects.create(short_name="BenchSet")
    for i in range(40):
        Sticker.objects.create(sticker_set=sticker_set, name=f"s{i}", unique_id=f"BS{i}", position=i)
        MediaDescription.objects.create(unique_id=f"BS{i}", kind="sticker", description=f"sticker number {i}")
    conversation = Conversation.objects.create(agent=agent, peer_id=4242, kind="dm", title="Alice")
    for i in range(20):
        Memory.objects.create(agent=agent, kind="curated", partner_id=4242, content=f"fact {i} about Alice")
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
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


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cindy-bench-") as tmp:
        setup_django(Path(tmp))
        from cindy_site.clock import FakeClock, set_clock
        from conversations.models import Message
        from llm.conversation import history_step
        from llm.prompt import TurnContext, build_plan_request
        from llm.prompt.metrics import serialize_request, shared_prefix_ratio

        conversation, last = populate()
        clock = FakeClock(last + dt.timedelta(minutes=1))
        set_clock(clock)

        timings = []
        for _ in range(RUNS):
            started = time.perf_counter()
            first = build_plan_request(conversation, TurnContext(target_message_id=HISTORY - 1))
            timings.append(time.perf_counter() - started)
        ratios = []
        previous = serialize_request(first)
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
            current = serialize_request(
                build_plan_request(conversation, TurnContext(target_message_id=HISTORY + step))
            )
            ratios.append(shared_prefix_ratio(previous, current))
            previous = current

        print(f"history messages in prompt: {len(first.turns) - 1}")
        print(f"prompt size: {len(serialize_request(first)):,} characters")
        print(
            f"prompt assembly time ({HISTORY}-message history): median "
            f"{statistics.median(timings) * 1000:.1f} ms, min {min(timings) * 1000:.1f} ms over {RUNS} runs"
        )
        on_target = sum(ratio >= TARGET_RATIO for ratio in ratios)
        print(
            f"shared-prefix ratio of two consecutive turns: {statistics.median(ratios):.4f} "
            f"(median over {TURNS} turns; lowest {min(ratios):.4f}, when the history window start moves, "
            f"once every {history_step()} messages)"
        )
        print(
            f"turns at or above the {TARGET_RATIO:.2f} target: {on_target}/{TURNS} ({on_target / TURNS:.1%})"
        )


if __name__ == "__main__":
    main()
