"""Retention benchmark: pruning a large activity table in batches, and the cost chart across it.

It fills a fresh SQLite database with ROWS activity events (default 1,000,000), nine in ten older than
the retention period, and 30 days of LLM calls of which the older ones expire, then runs
`engine.retention.retention_run` to the end. It prints the rows deleted, the number of batches and
the longest batch: each batch is one transaction, so on SQLite (IMMEDIATE transactions) that is the
longest time the write lock was held. Goal: under 1 s. It also checks the dashboard's cost chart is
the same before and after pruning.

Run: .venv/bin/python bench/bench_retention.py [ROWS]
It builds its own SQLite database in a temporary directory and touches nothing else.
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_prompt import setup_django  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
CHUNK = 20_000
LOCK_GOAL_SECONDS = 1.0
NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)


def fill() -> None:
    from django.db import connection, transaction

    from agents.models import Agent
    from llm.models import LLMCall

    agent = Agent.objects.create(name="Bench", phone="+15550000000", instructions="You are Bench.")
    old, new = NOW - dt.timedelta(days=60), NOW - dt.timedelta(days=1)
    started = time.monotonic()
    with connection.cursor() as cursor:
        for first in range(0, ROWS, CHUNK):
            rows = [
                ((old if i % 10 else new).isoformat(), "info", agent.pk, f"event {i}", "{}")
                for i in range(first, min(first + CHUNK, ROWS))
            ]
            with transaction.atomic():
                cursor.executemany(
                    "INSERT INTO conversations_activityevent (created, kind, agent_id, summary, data) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    rows,
                )
    calls = [
        LLMCall(
            created=NOW - dt.timedelta(days=day, hours=hour),
            agent=agent,
            provider="gemini",
            model="gemini-3-flash",
            input_tokens=1000,
            output_tokens=100,
            cost="0.000800",
        )
        for day in range(30)
        for hour in range(0, 24, 2)
    ]
    LLMCall.objects.bulk_create(calls)
    print(f"filled {ROWS:,} activity events and {len(calls)} LLM calls in {time.monotonic() - started:.1f} s")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        setup_django(Path(tmp))
        from django.conf import settings

        from cindy_site.clock import FakeClock, set_clock
        from engine.retention import prune_counts, retention_run
        from llm.costs import daily_costs

        settings.CINDY_RETAIN_ACTIVITY_DAYS = 30
        settings.CINDY_RETAIN_LLM_CALLS_DAYS = 7
        set_clock(FakeClock(NOW))
        fill()
        print("would delete:", prune_counts())
        before = daily_costs()
        started = time.monotonic()
        report = retention_run()
        elapsed = time.monotonic() - started
        print(f"deleted {report.describe()} in {elapsed:.1f} s")
        print(
            f"longest batch (write lock held): {report.longest_batch * 1000:.0f} ms; goal < {LOCK_GOAL_SECONDS * 1000:.0f} ms"
        )
        same = daily_costs() == before
        print(f"cost chart unchanged after pruning: {same}")
        if report.longest_batch >= LOCK_GOAL_SECONDS or not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
