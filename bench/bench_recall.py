"""Recall benchmark: search latency against the size of the index, and what indexing costs a message.

1. For indexes of SIZES entries (one agent, CHATS conversations, messages of TEXT_WORDS words drawn
   from the words of docs/, so that some words are common and most are rare), it prints the p50 and
   p95 wall time of QUERIES searches of two or three words as one conversation recalls (its own
   entries and the agent's global ones), over RUNS runs (the median of each), by words alone and
   fused with the vectors (Cindy's default). Goal: p95 at most LATENCY_GOAL_MS. Then the same
   searches across the DMs (`other_dms`: a persona whose "Recall Across Chats" is `DMs`, in one of
   the CHATS direct chats, so all of them are in scope): what recall across chats costs a turn.
2. The CPU time of this process to index one new message (`recall.services.message_index`, the
   upkeep ingest runs), as the mean over RUNS runs of INGEST messages (their total CPU over their
   number: what ingest pays per message), with the median of the runs' means beside it, not
   compared. Goal: at most INGEST_GOAL_MS on average. On SQLite the FTS5 work runs in this process
   and is counted; MariaDB's own work is not.

3. Quality (`bench/recall_quality.py`): recall@10 on the evaluation set EVAL (a file or a folder of
   conversations with planted facts and questions in other words, docs/recall.md), for plain BM25
   over the same messages, Cindy's full-text search, the vectors alone and the fused search. Goal:
   the fused search above plain BM25. With each mode's search latency on that set (medians of RUNS).

Run: .venv/bin/python bench/bench_recall.py [--sizes 10000,100000] [--mysql mysql://root@127.0.0.1:3306/NAME]
     [--eval PATH] [--only latency|quality]
Without --mysql it builds its own SQLite database in a temporary directory; with it, it uses (and
first empties of recall entries) the named MariaDB/MySQL database, which it creates when missing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_prompt import setup_django  # noqa: E402
from figures import Declared, Goal, Statistic, samples  # noqa: E402

SIZES = (10_000, 100_000)
CHATS = 50
TEXT_WORDS = 14
QUERIES = 200
RUNS = 3
INGEST = 500
LATENCY_GOAL_MS = 50.0
INGEST_GOAL_MS = 1.0
BATCH = 200
INGEST_COST = Declared(
    "indexing a message, CPU of this process",
    Statistic.MEAN,
    "ms",
    Goal(INGEST_GOAL_MS, f"≤ {INGEST_GOAL_MS:.0f} ms per message, mean", Statistic.MEAN),
)
EVAL = Path(__file__).resolve().parent / "recall_eval"
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def setup_mysql(url: str) -> None:
    import MySQLdb

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    server = MySQLdb.connect(
        host=parsed.hostname or "127.0.0.1",
        port=parsed.port or 3306,
        user=parsed.username or "root",
        passwd=parsed.password or "",
    )
    server.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4")
    server.close()
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "cindy_site.settings"
    os.environ["CINDY_ENV_FILE"] = os.devnull
    os.environ["DATABASE_URL"] = url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def vocabulary() -> list[str]:
    from recall.stemming import words

    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    return [w for w in words(text) if w.isalpha() and len(w) > 2]  # with repeats: common words stay common


def fill(agent, chats, size: int, pool: list[str], rng: random.Random) -> None:
    """`size` message entries spread over the chats, written as the build writes them."""
    from recall.models import EntryKind
    from recall.services import entries_write
    from recall.sources import EntryValues

    entries = []
    for n in range(size):
        chat = chats[n % len(chats)]
        entries.append(
            EntryValues(
                agent_id=agent.pk,
                conversation_id=chat.pk,
                peer_id=chat.peer_id,
                topic_id=0,
                kind=EntryKind.MESSAGE,
                source_id=10_000_000 + n,
                part=0,
                message_id=n,
                date=START + dt.timedelta(seconds=n),
                text=" ".join(rng.choices(pool, k=TEXT_WORDS)),
            )
        )
        if len(entries) == BATCH:
            entries_write(entries)
            entries = []
    entries_write(entries)


def latency(
    agent, chats, pool: list[str], rng: random.Random, mode: str, *, across: bool = False
) -> tuple[float, float]:
    """(p50, p95) ms of QUERIES searches as a chat recalls; `across`: with the other DMs in scope."""
    from recall.selectors import recall_search

    times = []
    for _ in range(QUERIES):
        query = " ".join(rng.sample(pool, rng.choice((2, 3))))
        chat = rng.choice(chats)
        started = time.perf_counter()
        recall_search(
            agent_id=agent.pk, query=query, conversation=chat, limit=10, mode=mode, other_dms=across
        )
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.95) - 1]


def ingest_cost(chat, pool: list[str], rng: random.Random, run: int) -> tuple[float, int]:
    """(CPU ms, messages) of indexing INGEST new messages of `chat`."""
    from conversations.models import Message
    from recall.services import message_index

    Message.objects.bulk_create(
        Message(
            conversation=chat,
            message_id=1_000_000 * (run + 1) + n,
            date=START,
            text=" ".join(rng.choices(pool, k=TEXT_WORDS)),
        )
        for n in range(INGEST)
    )
    messages = list(Message.objects.filter(conversation=chat, message_id__gte=1_000_000 * (run + 1)))
    started = time.process_time()
    for message in messages:
        message_index(conversation=chat, message=message)
    return (time.process_time() - started) * 1000, len(messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--mysql", metavar="URL", help="benchmark this MariaDB/MySQL database instead")
    parser.add_argument("--eval", metavar="PATH", type=Path, default=EVAL, help="evaluation file or folder")
    parser.add_argument("--only", choices=("latency", "quality"), help="run one part")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.only != "latency":
        from recall_quality import EvalFileError, load_sets

        try:
            sets = load_sets(args.eval)
        except EvalFileError as error:
            parser.error(str(error))
    with tempfile.TemporaryDirectory() as workdir:
        if args.mysql:
            setup_mysql(args.mysql)
        else:
            setup_django(Path(workdir))
        from django.db import connection

        print(f"database: {connection.vendor}")
        if args.only != "quality":
            latency_and_ingest(sizes)
        if args.only != "latency":
            quality(sets, args.eval)


def quality(sets: list[dict], path: Path) -> None:
    from recall_quality import K, evaluate, ingest

    from agents.models import Agent
    from recall.models import RecallEntry

    RecallEntry.objects.all().delete()
    Agent.objects.filter(name="RecallEval").delete()
    agent = Agent.objects.create(name="RecallEval", phone="+15550003737")
    started = time.process_time()
    chats = ingest(agent, sets, START)
    stored = sum(len(d["messages"]) for d in sets)
    cost = (time.process_time() - started) * 1000 / stored
    found = evaluate(agent, sets, chats, RUNS)
    recall, took = found["recall"], found["latency"]
    print(
        f"recall@{K} on {path}: {len(sets)} conversations, {stored:,} messages "
        f"(ingested at {cost:.2f} ms CPU each, whole gateway path), {found['questions']} questions"
    )
    print(f"  plain BM25 (baseline)  {recall['bm25']:.3f}")
    for mode, label in (
        ("fulltext", "full text alone"),
        ("vectors", "vectors alone"),
        ("fused", "fused (default)"),
    ):
        p50, p95 = took[mode]
        print(f"  {label:<22} {recall[mode]:.3f}   search p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    verdict = "ok" if recall["fused"] > recall["bm25"] else "missed"
    print(f"  goal: fused above plain BM25 ({recall['fused']:.3f} vs {recall['bm25']:.3f}): {verdict}")


def latency_and_ingest(sizes: list[int]) -> None:
    from agents.models import Agent
    from conversations.models import Conversation
    from recall.models import RecallEntry

    rng = random.Random(37)
    pool = vocabulary()
    print(f"{len(set(pool))} distinct words, {TEXT_WORDS} a message")
    for size in sizes:
        RecallEntry.objects.all().delete()
        Agent.objects.filter(name__startswith="RecallBench").delete()
        agent = Agent.objects.create(name=f"RecallBench{size}", phone=f"+1555{size:07d}")
        chats = [
            Conversation.objects.create(agent=agent, peer_id=100 + n, kind="dm", title=f"chat {n}")
            for n in range(CHATS)
        ]
        started = time.perf_counter()
        fill(agent, chats, size, pool, rng)
        built = time.perf_counter() - started
        # One chat's scope, then the same searches across all CHATS DMs: the four taken in turn
        # within each run, so a busy machine slows them alike.
        scopes = (("fulltext", False), ("fused", False), ("fulltext", True), ("fused", True))
        runs = {scope: [] for scope in scopes}
        for _ in range(RUNS):
            for mode, across in scopes:
                runs[mode, across].append(latency(agent, chats, pool, rng, mode, across=across))
        for mode, across in scopes:
            p50 = statistics.median(r[0] for r in runs[mode, across])
            p95 = statistics.median(r[1] for r in runs[mode, across])
            verdict = "ok" if p95 <= LATENCY_GOAL_MS else "over"
            scope = f"across {CHATS} DMs" if across else "one chat"
            print(
                f"{size:>9,} entries (built in {built:.1f} s), {mode:<8}, {scope:<13}: search p50 {p50:.2f} ms, "
                f"p95 {p95:.2f} ms (goal p95 <= {LATENCY_GOAL_MS:.0f} ms: {verdict})"
            )
    ingested = [ingest_cost(chats[0], pool, rng, run) for run in range(RUNS)]
    per_run = samples(INGEST_COST, [cpu / count for cpu, count in ingested])
    mean = sum(cpu for cpu, _ in ingested) / sum(count for _, count in ingested)
    print(
        f"{INGEST_COST.name}: {INGEST_COST.figure(mean).line()} ({mean:.3f} ms; "
        f"median of {RUNS} runs' means {statistics.median(per_run):.3f} ms, not compared)"
    )


if __name__ == "__main__":
    main()
