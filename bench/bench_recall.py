"""Recall benchmark: search latency against the size of the index, and what indexing costs a message.

1. For indexes of SIZES entries (one agent, CHATS conversations, messages of TEXT_WORDS words drawn
   from the words of docs/, so that some words are common and most are rare), it prints the p50 and
   p95 wall time of QUERIES searches of two or three words as one conversation recalls (its own
   entries and the agent's global ones), over RUNS runs (the median of each), by words alone and
   fused with the vectors (Cindy's default), with the CPU of this process a search and the load
   average. Each search is made as a turn makes it: without the chat's newest CINDY_HISTORY_SIZE
   messages (the history its prompt shows: `messages_before`, `history_bounds`), by words for the
   automatic `# Recalled` section's CANDIDATES hits with the query's informative words only (as
   that section asks), fused for a `recall` task's TASK_HITS with the words as drawn
   (`llm/recalled.py`). Goal: p95 at most LATENCY_GOAL_MS. The index is written by bulk SQL (`fill`) and grows
   from one size to the next; with --copy-above N, sizes above N are copies of the first N made in
   the database (`copy_fill`). `--modes previous,...` also times a chat's search by words as it was
   before `recall/fulltext.py`'s scoped words (plain words, `previous_fulltext`) on the same table
   (the whole history, the words as drawn, 10 hits: compare it with the bench's earlier runs, not
   with today's `fulltext`). Then the same
   searches across the DMs (`other_dms`: a persona whose "Recall Across Chats" is `DMs`, in one of
   the direct chats, so all of them are in scope): what recall across chats costs a turn
   (`--no-across` leaves it out).
2. The CPU time of this process to index one new message (`recall.services.message_index`, the
   upkeep ingest runs), as the mean over RUNS runs of INGEST messages (their total CPU over their
   number: what ingest pays per message), with the median of the runs' means beside it, not
   compared. Goal: at most INGEST_GOAL_MS on average. On SQLite the FTS5 work runs in this process
   and is counted; MariaDB's own work is not. On SQLite the bulk-filled index is merged first, as
   the migrations merge one they fill (`fulltext_merge`); the searches are timed on it merged too
   (an index grown a message at a time is in a few segments per level of FTS5's merging, not one).

3. Quality (`bench/recall_quality.py`): recall@10 on the evaluation set EVAL (a file or a folder of
   conversations with planted facts and questions in other words, docs/recall.md), for plain BM25
   over the same messages, Cindy's full-text search, the vectors alone and the fused search. Goal:
   the fused search above plain BM25. With each mode's search latency on that set (medians of RUNS).
   With `--embeddings MODEL` (a provider's embedding model, as CINDY_RECALL_EMBEDDINGS names it; its
   key in the environment, GOOGLE_GEMINI_API_KEY or OPENAI_API_KEY), the set's entries are embedded
   by that model first (the worker's fill, run here; the calls are paid) and two more rankings are
   measured: the provider's vectors alone and the fusion of all three.

Run: .venv/bin/python bench/bench_recall.py [--sizes 10000,100000,1000000] [--copy-above 100000]
     [--mysql mysql://root@127.0.0.1:3306/NAME] [--eval PATH] [--only latency|quality]
     [--chats N] [--queries N] [--runs N] [--modes fulltext,fused] [--embeddings MODEL]
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

SIZES = (10_000, 100_000, 1_000_000)
CHATS = 50
TEXT_WORDS = 14
QUERIES = 200
RUNS = 3
INGEST = 500
LATENCY_GOAL_MS = 50.0
INGEST_GOAL_MS = 1.0
BULK = 5_000
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


def fill(agent, chats, start: int, size: int, pool: list[str], rng: random.Random) -> None:
    """Message entries `start` to `size` spread over the chats, as the product writes them (the
    same rows, `terms` and real vectors, `recall.services.entry_row`), by bulk SQL: a plain INSERT
    per BULK rows through `executemany`. The vectors are the model's own (`word_vectors`). On MariaDB/MySQL the
    FULLTEXT index is dropped for the load and made again after it (much faster than InnoDB's
    per-commit upkeep of a large index); on SQLite the FTS5 triggers run as they do for the product.
    The cost of indexing through the product's upsert is measured apart (`ingest_cost`)."""
    import numpy as np
    from django.db import connection, transaction

    from recall.embedding import STORED_DTYPE
    from recall.models import EntryKind, RecallEntry
    from recall.services import COLUMNS, entry_row
    from recall.sources import EntryValues

    table = connection.ops.quote_name(RecallEntry._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"  # noqa: S608
    mysql = connection.vendor == "mysql"
    if mysql:
        fulltext_drop()
    row_of, table_of_words = word_vectors(pool)
    for first in range(start, size, BULK):
        entries, picked = [], []
        for n in range(first, min(first + BULK, size)):
            chat = chats[n % len(chats)]
            chosen = rng.choices(pool, k=TEXT_WORDS)
            picked.append([row_of[w] for w in chosen])
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
                    text=" ".join(chosen),
                )
            )
        sums = table_of_words[np.array(picked)].sum(axis=1)
        units = (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(STORED_DTYPE)
        vectors = [row.tobytes() for row in units]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(
                sql, [entry_row(connection, e, v) for e, v in zip(entries, vectors, strict=True)]
            )
    if mysql:
        fulltext_create()


def copy_fill(start: int, size: int, made: int) -> None:
    """Entries `start` to `size` as copies of the first `made` (entry n copies entry n mod `made`:
    the same chat, text, terms and vector; its own source and message id), by INSERT ... SELECT in
    the database, `made` at a time: a million entries in minutes where the generator, on a shared
    machine, takes an hour. Each text then occurs size / made times; word and scope frequencies
    grow as the generator's would."""
    from django.db import connection, transaction

    from recall.services import COLUMNS

    names = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    taken = ", ".join(
        {"source_id": "source_id + %s", "message_id": "message_id + %s"}.get(c, connection.ops.quote_name(c))
        for c in COLUMNS
    )
    mysql = connection.vendor == "mysql"
    if mysql:
        fulltext_drop()
    for first in range(start, size, made):
        count = min(made, size - first)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO recall_recallentry ({names}) SELECT {taken} FROM recall_recallentry "  # noqa: S608
                "WHERE kind = 'message' AND source_id >= %s AND source_id < %s",
                [first, first, 10_000_000, 10_000_000 + count],
            )
    if mysql:
        fulltext_create()


def word_vectors(pool: list[str]):
    """(row by word, matrix): each word's sum of WordLlama token vectors, as `recall.embedding.embed`
    sums them. The model's tokenizer splits at spaces first (a text's tokens are its words' tokens,
    in order), so a text's vector is the normalised sum of its words' rows: the vector `embed` gives,
    computed for a million texts in seconds instead of minutes."""
    import numpy as np

    from recall.embedding import model

    loaded = model()
    distinct = sorted(set(pool))
    table = np.zeros((len(distinct), loaded.table.shape[1]), dtype=np.float32)
    for row, encoding in enumerate(loaded.tokenizer.encode_batch(distinct, add_special_tokens=False)):
        table[row] = loaded.table[np.asarray(encoding.ids, dtype=np.int64)].sum(axis=0, dtype=np.float32)
    return {word: row for row, word in enumerate(distinct)}, table


def fulltext_drop() -> None:
    """MariaDB/MySQL: drop the FULLTEXT index of migration 0002, if it is there."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW INDEX FROM recall_recallentry WHERE Key_name = 'recall_entry_terms_ft'")
        if cursor.fetchall():
            cursor.execute("DROP INDEX recall_entry_terms_ft ON recall_recallentry")


def fulltext_create() -> None:
    """MariaDB/MySQL: make the FULLTEXT index of migration 0002 again."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CREATE FULLTEXT INDEX recall_entry_terms_ft ON recall_recallentry (terms)")


def fulltext_merge() -> float | None:
    """SQLite: merge the FTS5 index into one segment, as migrations 0002, 0009 and 0010 leave an
    index they filled in one statement (`SQLITE_MERGE`); returns the seconds it took (None on
    MariaDB/MySQL). `copy_fill`'s statements of 100,000 entries leave merging behind that the next
    messages indexed pay a share of (at 1M, 0.8 to 1.5 ms a message instead of 0.5): an index
    written in transactions of 5,000 entries (`fill` alone, to 1M) showed none (0.27 to 0.37 ms a
    message, the same merged), nor does one grown a message at a time or by `recall_index`'s
    batches of 500."""
    import importlib

    from django.db import connection

    if connection.vendor != "sqlite":
        return None
    first = importlib.import_module("recall.migrations.0002_fulltext")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(first.SQLITE_MERGE)
    return time.perf_counter() - started


def empty_index() -> None:
    """Forget every recall entry (TRUNCATE on MariaDB/MySQL: a DELETE of a million rows with a
    FULLTEXT index takes minutes). InnoDB refuses to truncate a table that a foreign key names
    (the provider vectors' table names the entries'), even an empty one: both are truncated with
    the checks off."""
    from django.db import connection

    from recall.models import RecallEntry, RecallProviderVector

    if connection.vendor == "mysql":
        with connection.cursor() as cursor:
            cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
            try:
                cursor.execute(f"TRUNCATE TABLE {RecallProviderVector._meta.db_table}")
                cursor.execute("TRUNCATE TABLE recall_recallentry")
            finally:
                cursor.execute("SET FOREIGN_KEY_CHECKS = 1")
    else:
        RecallEntry.objects.all().delete()


def history_bounds(agent, chats) -> dict[int, int | None]:
    """Conversation id → the message id a turn's recall searches below: the chat's messages before
    its newest CINDY_HISTORY_SIZE, which the prompt's history shows (None: the chat has no more)."""
    from django.conf import settings
    from django.db import connection

    bounds = {}
    with connection.cursor() as cursor:
        for chat in chats:
            cursor.execute(
                "SELECT message_id FROM recall_recallentry WHERE agent_id = %s AND peer_id = %s "
                "AND topic_id = 0 AND kind = 'message' ORDER BY message_id DESC LIMIT 1 OFFSET %s",
                [agent.pk, chat.peer_id, settings.CINDY_HISTORY_SIZE - 1],
            )
            row = cursor.fetchone()
            bounds[chat.pk] = row[0] if row else None
    return bounds


def latency(
    agent,
    chats,
    pool: list[str],
    rng: random.Random,
    mode: str,
    queries: int,
    *,
    across: bool = False,
    bounds: dict[int, int | None] | None = None,
) -> tuple[float, float, float]:
    """(p50, p95 of wall time, mean CPU time of this process), ms a search, as a chat recalls;
    `across`: with the agent's other DMs in scope. `bounds` (`history_bounds`): each chat's history
    left out, as a turn leaves it out."""
    from llm.recalled import CANDIDATES, TASK_HITS, informative_words
    from recall.selectors import recall_search

    times = []
    cpu = time.process_time()
    for _ in range(queries):
        query = " ".join(rng.sample(pool, rng.choice((2, 3))))
        if mode == "fulltext" and bounds is not None:
            # The automatic section asks for a message's informative words only.
            while not informative_words(query):
                query = " ".join(rng.sample(pool, rng.choice((2, 3))))
            query = " ".join(informative_words(query))
        chat = rng.choice(chats)
        started = time.perf_counter()
        if mode == "previous":
            previous_fulltext(agent, chat, query)
        else:
            recall_search(
                agent_id=agent.pk,
                query=query,
                conversation=chat,
                limit=CANDIDATES if mode == "fulltext" else TASK_HITS,
                mode=mode,
                other_dms=across,
                messages_before=(bounds or {}).get(chat.pk),
            )
        times.append((time.perf_counter() - started) * 1000)
    cpu = (time.process_time() - cpu) * 1000 / queries
    times.sort()
    return times[len(times) // 2], times[int(len(times) * 0.95) - 1], cpu


def previous_fulltext(agent, chat, query: str) -> list:
    """A conversation's search by words as it was before scoped words (`recall/fulltext.py`;
    MariaDB/MySQL migration 0008, SQLite 0009), on the same table, timed beside today's: on
    MariaDB/MySQL the plain words, which the index still holds, with the scope a condition of the
    SQL only; on SQLite the plain words of the text column AND the chat's scope words in the scope
    column (migration 0002's), ranked by the text column."""
    from django.db import connection

    from recall.fulltext import scope_key
    from recall.selectors import query_words
    from recall.stemming import stem

    found = query_words(query)
    scope = "e.agent_id = %s AND (e.peer_id IS NULL OR (e.peer_id = %s AND e.topic_id = %s))"
    params = [agent.pk, chat.peer_id, chat.topic_id]
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            against = " ".join(stem(w) for w in found)
            cursor.execute(
                "SELECT e.id, MATCH(e.terms) AGAINST (%s IN NATURAL LANGUAGE MODE) AS score "
                "FROM recall_recallentry e WHERE MATCH(e.terms) AGAINST (%s IN NATURAL LANGUAGE MODE) "
                f"AND {scope} ORDER BY score DESC, e.id DESC LIMIT 10",
                [against, against, *params],
            )
        else:
            scopes = (scope_key(agent.pk, None, 0), scope_key(agent.pk, chat.peer_id, chat.topic_id))
            match = (
                "text : (" + " OR ".join(f'"{w}"' for w in found) + ") AND "
                "scope : (" + " OR ".join(f'"{key}"' for key in scopes) + ")"
            )
            cursor.execute(
                "SELECT e.id, -bm25(recall_recallentry_fts, 1.0, 0.0) AS score FROM recall_recallentry_fts "
                "JOIN recall_recallentry e ON e.id = recall_recallentry_fts.rowid "
                f"WHERE recall_recallentry_fts MATCH %s AND {scope} ORDER BY score DESC, e.id DESC LIMIT 10",
                [match, *params],
            )
        return cursor.fetchall()


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
    parser.add_argument(
        "--embeddings",
        metavar="MODEL",
        default="",
        help="also measure this provider embedding model (paid calls)",
    )
    parser.add_argument(
        "--chats", type=int, default=CHATS, help="conversations the latency index spreads over"
    )
    parser.add_argument("--queries", type=int, default=QUERIES, help="searches per run and mode")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs (medians are printed)")
    parser.add_argument(
        "--copy-above",
        type=int,
        default=0,
        metavar="N",
        help="sizes above N entries are made by copying the first N in the database (copy_fill); "
        "N a size of --sizes, a multiple of --chats",
    )
    parser.add_argument(
        "--modes",
        default="fulltext,fused",
        help="search modes timed, comma separated (also 'previous', a chat's search by words before "
        "scoped words)",
    )
    parser.add_argument(
        "--no-across", action="store_true", help="leave out the searches across the agent's DMs"
    )
    parser.add_argument(
        "--no-merge",
        action="store_true",
        help="SQLite: leave the FTS5 index as the fill wrote it (in transactions of 5,000 entries "
        "without --copy-above, an index in the segments FTS5's own merging leaves)",
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

        print(f"database: {connection.vendor}", flush=True)
        if connection.vendor == "mysql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT @@innodb_buffer_pool_size")
                (pool,) = cursor.fetchone()
            # At 1M entries the table and its FULLTEXT index are over 1 GB: the search's cost
            # depends on how much of them the server holds in memory.
            print(f"InnoDB buffer pool: {int(pool) // 2**20:,} MiB", flush=True)
        if args.only != "quality":
            latency_and_ingest(
                sizes,
                chats_count=args.chats,
                queries=args.queries,
                runs=args.runs,
                modes=args.modes.split(","),
                copy_above=args.copy_above,
                across=not args.no_across,
                merge=not args.no_merge,
            )
        if args.only != "latency":
            quality(sets, args.eval, embeddings=args.embeddings)


def quality(sets: list[dict], path: Path, *, embeddings: str = "") -> None:
    from recall_quality import K, evaluate, ingest

    from agents.models import Agent

    empty_index()
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


def latency_and_ingest(
    sizes: list[int],
    *,
    chats_count: int,
    queries: int,
    runs: int,
    modes: list[str],
    copy_above: int = 0,
    across: bool = True,
    merge: bool = True,
) -> None:
    """The index grows from one size to the next (the rows of a smaller size stay, the rest are
    added), so each size is the same kind of history, only longer."""
    from agents.models import Agent
    from conversations.models import Conversation

    rng = random.Random(37)
    pool = vocabulary()
    print(
        f"{len(set(pool))} distinct words, {TEXT_WORDS} a message, {chats_count} conversations of one agent"
    )
    empty_index()
    Agent.objects.filter(name__startswith="RecallBench").delete()
    agent = Agent.objects.create(name="RecallBench", phone="+15550000037")
    chats = [
        Conversation.objects.create(agent=agent, peer_id=100 + n, kind="dm", title=f"chat {n}")
        for n in range(chats_count)
    ]
    held = 0
    for size in sorted(sizes):
        started = time.perf_counter()
        if copy_above and held >= copy_above:
            copy_fill(held, size, copy_above)
        else:
            fill(agent, chats, held, size, pool, rng)
        built, held = time.perf_counter() - started, size
        merged = fulltext_merge() if merge else None
        if merged is not None:
            print(f"{size:>9,} entries: the FTS5 index merged in {merged:.1f} s", flush=True)
        # Runs of the modes (one chat's scope, then across the DMs) interleaved, so that the
        # machine's load weighs on each alike.
        scopes = [(mode, False) for mode in modes]
        scopes += [(mode, True) for mode in modes if across and mode != "previous"]
        by_mode = {scope: [] for scope in scopes}
        bounds = history_bounds(agent, chats)
        for _ in range(runs):
            for mode, wide in scopes:
                by_mode[mode, wide].append(
                    latency(agent, chats, pool, rng, mode, queries, across=wide, bounds=bounds)
                )
        for (mode, wide), measured in by_mode.items():
            p50 = statistics.median(r[0] for r in measured)
            p95 = statistics.median(r[1] for r in measured)
            cpu = statistics.median(r[2] for r in measured)
            verdict = "ok" if p95 <= LATENCY_GOAL_MS else "over"
            print(
                f"{size:>9,} entries (added in {built:.1f} s), {mode:<8}, "
                f"{f'across {chats_count} DMs' if wide else 'one chat':<13}: search p50 {p50:.2f} ms, "
                f"p95 {p95:.2f} ms (goal p95 <= {LATENCY_GOAL_MS:.0f} ms: {verdict}); "
                f"CPU of this process {cpu:.2f} ms a search, load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    ingested = [ingest_cost(chats[0], pool, rng, run) for run in range(runs)]
    per_run = samples(INGEST_COST, [cpu / count for cpu, count in ingested])
    mean = sum(cpu for cpu, _ in ingested) / sum(count for _, count in ingested)
    print(
        f"{INGEST_COST.name}: {INGEST_COST.figure(mean).line()} ({mean:.3f} ms; "
        f"median of {runs} runs' means {statistics.median(per_run):.3f} ms, not compared)"
    )


if __name__ == "__main__":
    main()
