"""Meaning-based recall: the entries nearest a query's vector, and the fusion of rankings.

A search scans the vectors of its scope's most recent entries (CINDY_RECALL_VECTOR_SCAN of the
chat's own, and as many of the agent's global ones, newest first, each read in the order of the
covering index of migration 0011), scores them by cosine similarity with the query's vector (`recall.embedding`) and
keeps the best. The fused search (`recall.selectors.recall_search`) adds these to the full-text
ranking by reciprocal rank fusion: an entry scores 1 / (RRF_K + rank) in each ranking it is in, the
sum ranks it. The scan is bounded so that a search costs the same however long the history is; what
lies beyond it is still found by its words.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

from django.conf import settings
from django.db import connections, router

from cindy_site import rows
from conversations.models import Conversation
from recall.embedding import embed, from_blobs
from recall.models import EntryKind, RecallEntry
from recall.services import vectors_fill

#: The vectors give the fusion their best this many entries (or the search's limit, if higher).
FUSION_DEPTH = 50
#: The full-text ranking gives it its best half of the search's limit (at least 1): words alone pick
#: out the few entries that share a rare word, and below those mostly entries that share common
#: ones ("my", "did"), which crowd out the vectors' better guesses (bench/RESULTS.md has the figures).
FULLTEXT_SHARE = 0.5
#: Entries less similar than this to the query are not the vectors' candidates: unrelated texts
#: score about 0 to 0.15 with WordLlama's vectors, a paraphrase of the query 0.2 and up.
MIN_SIMILARITY = 0.15
#: The vector scan's covering index (recall/migrations/0011_vector_scan_covers_bounds.py).
VECTOR_SCAN_INDEX = "recall_entry_vector_scan_idx"
#: The constant of reciprocal rank fusion (the usual 60): with both rankings weighed alike, the first hits interleave the two.
RRF_K = 60


def nearest_entries(
    *,
    agent_id: int,
    query: str,
    conversation: Conversation | None,
    kinds: Collection[str] | None,
    depth: int,
    messages_before: int | None = None,
    other_dms: bool = False,
) -> list[tuple[int, float]]:
    """(entry id, cosine similarity) of the `depth` scanned entries nearest `query`, nearest first."""
    import numpy as np  # on first use: recall.embedding

    wanted = embed([query])[0]
    if not wanted.any():
        return []
    scanned = _scan(
        agent_id=agent_id,
        conversation=conversation,
        kinds=kinds,
        messages_before=messages_before,
        other_dms=other_dms,
    )
    if not scanned:
        return []
    ids = np.array([entry_id for entry_id, _ in scanned], dtype=np.int64)
    similarity = from_blobs([blob for _, blob in scanned]) @ wanted
    close = similarity >= MIN_SIMILARITY
    ids, similarity = ids[close], similarity[close]
    if len(ids) > depth:
        best = np.argpartition(-similarity, depth - 1)[:depth]
        ids, similarity = ids[best], similarity[best]
    order = np.lexsort((-ids, -similarity))
    return [(int(ids[i]), float(similarity[i])) for i in order]


def _scan(
    *,
    agent_id: int,
    conversation: Conversation | None,
    kinds: Collection[str] | None,
    messages_before: int | None = None,
    other_dms: bool = False,
) -> list[tuple[int, bytes]]:
    """The vectors a search scores: the scope's most recent entries (with `messages_before`, messages
    only below that Telegram id: those the prompt's history does not show). Plain SQL (the ORM's rows
    cost more than the scoring): each part is read newest first along the covering index. Entries
    written without a vector (messages, at ingest) get theirs here, embedded and stored
    (`vectors_fill`), so each is embedded once, by the first search that reaches it. `other_dms`:
    as many of the agent's other direct chats' most recent entries too (`recall_search`)."""
    bound = settings.CINDY_RECALL_VECTOR_SCAN
    connection = connections[router.db_for_read(RecallEntry)]
    table = rows.table(RecallEntry)
    q = connection.ops.quote_name
    parts = scope_parts(
        agent_id=agent_id,
        conversation=conversation,
        kinds=kinds,
        messages_before=messages_before,
        other_dms=other_dms,
    )
    # The covering index of migration 0011 holds every column a part's condition names: the scan
    # reads no table row. A chat's part and the globals' fix its first three columns, so it gives
    # them in id order as well; those two name it, so that the planner never prefers the narrower
    # scope index. The other DMs' part and an agent-wide one (a range of peers) are left to it.
    hint = {"sqlite": f"INDEXED BY {VECTOR_SCAN_INDEX}", "mysql": f"FORCE INDEX ({VECTOR_SCAN_INDEX})"}
    in_order = 2 if conversation is not None else 0
    found: list[tuple[int, bytes]] = []
    with connection.cursor() as cursor:
        for number, (where, values) in enumerate(parts):
            named = hint.get(connection.vendor, "") if number < in_order else ""
            cursor.execute(
                f"SELECT {q('id')}, {q('vector')} FROM {table} {named} "  # noqa: S608
                f"WHERE {where} ORDER BY {q('id')} DESC LIMIT %s",
                [*values, bound],
            )
            found.extend(cursor.fetchall())
    missing = [entry_id for entry_id, blob in found if blob is None]
    if not missing:
        return found
    filled = vectors_fill(missing)
    return [
        (entry_id, blob if blob is not None else filled[entry_id])
        for entry_id, blob in found
        if blob is not None or entry_id in filled
    ]


def scope_parts(
    *,
    agent_id: int,
    conversation: Conversation | None,
    kinds: Collection[str] | None,
    messages_before: int | None = None,
    other_dms: bool = False,
) -> list[tuple[str, list]]:
    """The parts of a search's scope, each a condition on the entry table's own columns (unqualified)
    and its parameters: the conversation's own entries, the agent's global ones and, across chats,
    the other DMs' (without a conversation: every entry of the agent). Each part's most recent
    entries are what a vector scan reads (here and in `recall.provider_vectors`)."""
    connection = connections[router.db_for_read(RecallEntry)]
    q = connection.ops.quote_name
    base, params = f"{q('agent_id')} = %s", [agent_id]
    if kinds is not None:
        base += f" AND {q('kind')} IN ({', '.join(['%s'] * len(kinds))})"
        params += sorted(kinds)
    own, own_params = base, params
    if messages_before is not None:
        # Only the conversation's own messages (or every message, without one) count from the history.
        own += f" AND ({q('kind')} <> %s OR {q('message_id')} < %s)"
        own_params = [*params, EntryKind.MESSAGE.value, int(messages_before)]
    if conversation is None:
        parts = [(own, own_params)]
    else:
        parts = [
            (
                own + f" AND {q('peer_id')} = %s AND {q('topic_id')} = %s",
                [*own_params, conversation.peer_id, conversation.topic_id],
            ),
            # Global entries have topic 0; naming it keeps the read on the indexes, in id order.
            (base + f" AND {q('peer_id')} IS NULL AND {q('topic_id')} = 0", params),
        ]
        if other_dms:
            parts.append(
                (
                    base + f" AND {q('peer_id')} > 0 AND {q('peer_id')} <> %s AND {q('topic_id')} = 0",
                    [*params, conversation.peer_id],
                )
            )
    return parts


def fuse(rankings: Sequence[Sequence[int]]) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of rankings of entry ids (best first): (entry id, score), best first;
    ties go to the newer entry (the higher id)."""
    scores: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, entry_id in enumerate(ranking, start=1):
            scores[entry_id] += 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))
