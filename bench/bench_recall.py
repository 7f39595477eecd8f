"""Recall benchmark: search latency against the size of the index, and what indexing costs a message.

1. For indexes of SIZES entries (one agent, CHATS conversations, messages of TEXT_WORDS words drawn
   from the words of docs/, so that some words are common and most are rare), it prints the p50 and
   p95 wall time of QUERIES searches of two or three words as one conversation recalls (its own
   entries and the agent's global ones), over RUNS runs (the median of each), by words alone and
   fused with the vectors (Cindy's default). Goal: p95 at most LATENCY_GOAL_MS.
2. The CPU time of this process to index one new message (`recall.services.message_index`, the
   upkeep ingest runs, its vector included), as the median over RUNS runs of INGEST messages. Goal: at most
   INGEST_GOAL_MS. On SQLite the FTS5 work runs in this process and is counted; MariaDB's own work is
   not.

3. Quality (`bench/recall_quality.py`): recall@10 on the evaluation set EVAL (a file or a folder of
   conversations with planted facts and questions in other words, docs/recall.md), for plain BM25
   over the same messages, Cindy's full-text search, the vectors alone and the fused search. Goal:
   the fused search above plain BM25. With each mode's search latency on that set (medians of RUNS).
   With `--embeddings MODEL` (a provider's embedding model, as CINDY_RECALL_EMBEDDINGS names it; its
   key in the environment, GOOGLE_GEMINI_API_KEY or OPENAI_API_KEY), the set's entries are embedded
   by that model first (the worker's fill, run here; the calls are paid) and two more rankings are
   measured: the provider's vectors alone and the fusion of all three.

Run: .venv/bin/python bench/bench_recall.py [--sizes 10000,100000] [--mysql mysql://root@127.0.0.1:3306/NAME]
     [--eval PATH] [--only latency|quality] [--embeddings MODEL]
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

SIZES = (10_000, 100_000)
CHATS = 50
TEXT_WORDS = 14
QUERIES = 200
RUNS = 3
INGEST = 500
LATENCY_GOAL_MS = 50.0
INGEST_GOAL_MS = 1.0
BATCH = 200
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


def latency(agent, chats, pool: list[str], rng: random.Random, mode: str) -> tuple[float, float]:
    from recall.selectors import recall_search

    times = []
    for _ in range(QUERIES):
        query = " ".join(rng.sample(pool, rng.choice((2, 3))))
        started = time.perf_counter()
        recall_search(agent_id=agent.pk, query=query, conversation=rng.choice(chats), limit=10, mode=mode)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.95) - 1]


def ingest_cost(chat, pool: list[str], rng: random.Random, run: int) -> float:
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
    return (time.process_time() - started) * 1000 / len(messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    parser.add_argument("--mysql", metavar="URL", help="benchmark this MariaDB/MySQL database instead")
    parser.add_argument("--eval", metavar="PATH", type=Path, default=EVAL, help="evaluation file or folder")
    parser.add_argument("--only", choices=("latency", "quality"), help="run one part")
    parser.add_argument(
        "--embeddings",
        metavar="MODEL",
        default="",
        help="also measure this provider embedding model (paid calls)",
    )
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
            quality(sets, args.eval, embeddings=args.embeddings)


def quality(sets: list[dict], path: Path, *, embeddings: str = "") -> None:
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
    if embeddings:
        provider_quality(agent, sets, chats, embeddings)


def provider_quality(agent, sets: list[dict], chats: list, model: str) -> None:
    """The provider's ranking alone and the three fused, after the set's entries are embedded."""
    from django.conf import settings
    from django.db.models import Sum
    from recall_quality import K, evaluate

    from llm.embeddings import recall_embeddings_fill
    from llm.models import LLMCall

    settings.CINDY_RECALL_EMBEDDINGS = model
    while True:
        outcome = recall_embeddings_fill()
        if outcome.error:
            print(f"  the provider's rankings were not measured: {outcome.error}")
            return
        print(f"  {outcome.summary()}")
        if not outcome.more:
            break
    found = evaluate(agent, sets, chats, RUNS, modes=("provider", "fused"))
    recall, took = found["recall"], found["latency"]
    for mode, label in (("provider", f"{model} alone"), ("fused", "fused, three rankings")):
        p50, p95 = took[mode]
        print(
            f"  {label:<22} {recall[mode]:.3f}   search p50 {p50:.2f} ms, p95 {p95:.2f} ms (query cached after run 1)"
        )
    paid = LLMCall.objects.filter(purpose=LLMCall.Purpose.EMBED).aggregate(
        cost=Sum("cost"), tokens=Sum("input_tokens")
    )
    print(
        f"  embedding calls: {paid['tokens'] or 0:,} input tokens, ${(paid['cost'] or 0):.6f} (recall@{K} above)"
    )


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
        for mode in ("fulltext", "fused"):
            runs = [latency(agent, chats, pool, rng, mode) for _ in range(RUNS)]
            p50 = statistics.median(r[0] for r in runs)
            p95 = statistics.median(r[1] for r in runs)
            verdict = "ok" if p95 <= LATENCY_GOAL_MS else "over"
            print(
                f"{size:>9,} entries (built in {built:.1f} s), {mode:<8}: search p50 {p50:.2f} ms, "
                f"p95 {p95:.2f} ms (goal p95 <= {LATENCY_GOAL_MS:.0f} ms: {verdict})"
            )
    cost = statistics.median(ingest_cost(chats[0], pool, rng, run) for run in range(RUNS))
    verdict = "ok" if cost <= INGEST_GOAL_MS else "over"
    print(f"indexing a message: {cost:.3f} ms of CPU (goal <= {INGEST_GOAL_MS:.0f} ms: {verdict})")


if __name__ == "__main__":
    main()
