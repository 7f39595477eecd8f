"""How well recall finds what was said: recall@10 on conversations with planted facts.

An evaluation set is one JSON file per conversation (format: docs/recall.md, "Evaluating recall"),
or a folder of them. Each conversation is ingested into its own DM of one agent through the
gateway's path (`conversations.services.ingest.message_upsert`, which indexes each message as it
is stored); each question is then asked as that chat recalls, and its recall@10 is the share of its
answer messages among the first 10 hits. Four rankings over the same messages:

- plain BM25: Okapi BM25 (k1 1.5, b 0.75) over the messages' lowercase words, no stemming and no
  stopwords, written here in a few lines; the baseline the goal names;
- Cindy's full-text search alone (`recall_search(mode="fulltext")`);
- the vectors alone (`mode="vectors"`);
- both fused (`mode="fused"`, Cindy's default).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import statistics
import time
from collections import Counter
from pathlib import Path

K = 10
MODES = ("fulltext", "vectors", "fused")
_WORD = re.compile(r"\w+")


class EvalFileError(ValueError):
    pass


def load_sets(path: Path) -> list[dict]:
    """The conversations of an evaluation file, or of every *.json file in a folder."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise EvalFileError(
            f"{path}: no *.json files in this folder: point --eval at a file or a folder of them"
        )
    sets = []
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise EvalFileError(f"{file}: not a readable JSON file ({error})") from error
        sets.append(_checked(file, data))
    return sets


def _checked(file: Path, data) -> dict:
    def bad(where: str, what: str) -> EvalFileError:
        return EvalFileError(f"{file}: {where} {what} (see docs/recall.md, 'Evaluating recall')")

    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or not data["messages"]:
        raise bad("the top level", "needs a non-empty list 'messages'")
    if not isinstance(data.get("questions"), list) or not data["questions"]:
        raise bad("the top level", "needs a non-empty list 'questions'")
    ids = set()
    for n, m in enumerate(data["messages"]):
        if not isinstance(m, dict) or not isinstance(m.get("id"), int) or m["id"] < 1:
            raise bad(f"messages[{n}]", "needs an 'id': a positive whole number")
        if not isinstance(m.get("text"), str) or not m["text"].strip():
            raise bad(f"messages[{n}] (id {m['id']})", "needs a non-empty 'text'")
        if m.get("from", "user") not in ("user", "agent"):
            raise bad(f"messages[{n}] (id {m['id']})", f"has 'from' {m.get('from')!r}: use 'user' or 'agent'")
        if m["id"] in ids:
            raise bad(f"messages[{n}]", f"repeats the id {m['id']}: ids are unique within a file")
        ids.add(m["id"])
    for n, q in enumerate(data["questions"]):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not q["question"].strip():
            raise bad(f"questions[{n}]", "needs a non-empty 'question'")
        answers = q.get("answers")
        if not isinstance(answers, list) or not answers or not set(answers) <= ids:
            raise bad(f"questions[{n}]", f"has answers {answers!r}: list the ids of messages of this file")
    return {"name": data.get("name") or file.stem, **data}


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def bm25_scores(messages: list[dict], query: str, k1: float = 1.5, b: float = 0.75) -> dict[int, float]:
    """Plain Okapi BM25 of each message that shares a word with the query, by message id."""
    docs = [(m["id"], Counter(tokens(m["text"]))) for m in messages]
    lengths = {mid: sum(c.values()) for mid, c in docs}
    average = sum(lengths.values()) / len(docs)
    having = Counter(word for _, c in docs for word in c)
    scores = {}
    for mid, counts in docs:
        score = 0.0
        for word in set(tokens(query)):
            if counts[word]:
                idf = math.log((len(docs) - having[word] + 0.5) / (having[word] + 0.5) + 1)
                tf = counts[word]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[mid] / average))
        if score > 0:
            scores[mid] = score
    return scores


def bm25_ranking(messages: list[dict], query: str) -> list[int]:
    """Message ids by plain BM25, best first (ties: the newer message)."""
    scores = bm25_scores(messages, query)
    return sorted(scores, key=lambda mid: (-scores[mid], -mid))


def recall_at(ranking: list[int], answers: list[int], k: int = K) -> float:
    return len(set(ranking[:k]) & set(answers)) / len(set(answers))


def ingest(agent, sets: list[dict], start: dt.datetime) -> list:
    """Each conversation into its own DM of `agent`, message by message as the gateway stores them."""
    from conversations.services.ingest import message_upsert
    from conversations.transport.base import InboundMessage

    chats = []
    for n, data in enumerate(sets):
        peer = 700_000 + n
        chat = None
        for i, m in enumerate(data["messages"]):
            date = dt.datetime.fromisoformat(m["date"]) if m.get("date") else start + dt.timedelta(minutes=i)
            outgoing = m.get("from", "user") == "agent"
            record = InboundMessage(
                peer_id=peer,
                chat_kind="dm",
                message_id=m["id"],
                date=date,
                sender_id=None if outgoing else peer,
                sender_name="" if outgoing else f"Person {n}",
                text=m["text"],
                is_outgoing=outgoing,
            )
            chat, _, _ = message_upsert(agent=agent, record=record, edited=False)
        chats.append(chat)
    return chats


def evaluate(agent, sets: list[dict], chats: list, runs: int, modes: tuple[str, ...] = MODES) -> dict:
    """Mean recall@K per ranking, and each mode's search latency (p50, p95 in ms; medians of runs)."""
    from recall.selectors import recall_search

    scores: dict[str, list[float]] = {name: [] for name in ("bm25", *modes)}
    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    for run in range(runs):
        took: dict[str, list[float]] = {mode: [] for mode in modes}
        for data, chat in zip(sets, chats, strict=True):
            for q in data["questions"]:
                if run == 0:
                    scores["bm25"].append(
                        recall_at(bm25_ranking(data["messages"], q["question"]), q["answers"])
                    )
                for mode in modes:
                    started = time.perf_counter()
                    hits = recall_search(
                        agent_id=agent.pk, query=q["question"], conversation=chat, limit=K, mode=mode
                    )
                    took[mode].append((time.perf_counter() - started) * 1000)
                    if run == 0:
                        scores[mode].append(recall_at([h.message_id for h in hits], q["answers"]))
        for mode in modes:
            ordered = sorted(took[mode])
            times[mode].append(
                (ordered[len(ordered) // 2], ordered[max(0, math.ceil(len(ordered) * 0.95) - 1)])
            )
    return {
        "recall": {name: statistics.fmean(values) for name, values in scores.items()},
        "latency": {
            mode: (statistics.median(t[0] for t in pairs), statistics.median(t[1] for t in pairs))
            for mode, pairs in times.items()
        },
        "questions": len(scores["bm25"]),
    }
