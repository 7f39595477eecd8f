"""Provider embeddings for recall: a third ranking, where an operator turns it on (CINDY_RECALL_EMBEDDINGS).

With `CINDY_RECALL_EMBEDDINGS` naming an embedding model (`gemini-embedding-001`,
`text-embedding-3-small`, ...), each entry also gets that model's vector (`RecallProviderVector`,
one row per entry and model, beside the local WordLlama vector), and a fused search adds the
ranking of those vectors to the full-text and local ones.

The calls themselves are the llm app's (`llm/embeddings.py`: the real SDKs, each call an `LLMCall`
row costed at the model's price); this app sits below it, so llm installs them here
(`provider_embedder_install`) when it loads, as it installs its endpoint loader in `cindy_site`.

- **Made by a worker job, in batches.** Entries are written without a provider vector (ingest makes
  no network call); the job (`Embedder.request_fill`, a django-q2 task) embeds the newest entries
  that lack one, a batch per call, a bounded number of batches per run, and queues itself again
  while more remain. It resumes where the vectors stop: what it needs is read from the table
  (`entries_missing`), so a run killed half-way loses at most its batch in flight.
- **Searched like the local vectors.** A search embeds its query (one call, kept
  `QUERY_CACHE_SECONDS` per model and text in this process), scans the provider vectors of the
  scope's most recent entries (the same parts and bound as `recall.similar`) and keeps the nearest.
  A scope whose recent entries lack vectors asks the worker for a fill (at most once a minute per
  process). A vector whose entry's text has changed since (its `digest`) is dropped from the
  ranking and deleted, so the next fill embeds the new text.
- **Never in the way.** A provider that fails or is slow (the query call has a short timeout) leaves
  the search to the other two rankings: logged once per process and error, never raised.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, connections, models, router, transaction

from cindy_site import rows
from cindy_site.clock import get_clock, now
from conversations.models import Conversation
from recall.models import RecallEmbeddingFill, RecallEntry, RecallProviderVector
from recall.similar import scope_parts

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

#: How a provider vector is stored: unit length, little-endian float16.
STORED_DTYPE = "<f2"
#: A query's vector is kept this long per process (a turn's recall and its `recall` task, an
#: operator paging through hits, ask the same text again within seconds).
QUERY_CACHE_SECONDS = 300.0
#: The most query vectors one process keeps.
QUERY_CACHE_SIZE = 256
#: A process asks the worker for a fill at most this often.
FILL_REQUEST_SECONDS = 60.0
#: Provider vectors less similar than this to the query are not candidates (a provider's model
#: scores unrelated texts higher than WordLlama does; 0 keeps every scanned entry in the ranking).
MIN_SIMILARITY = 0.0


class ProviderEmbeddingFailed(RuntimeError):
    """The provider could not embed the texts (the message names the model and why)."""


@dataclass(frozen=True)
class Embedder:
    """What the llm app installs: `embed(texts, model=, purpose=, agent_id=)` returns one vector per
    text (raising ProviderEmbeddingFailed), `purpose` "query" (a search, short timeout) or
    "document" (the fill); `request_fill()` queues the worker job."""

    embed: Callable[..., list[Sequence[float]]]
    request_fill: Callable[[], None]


_embedder: Embedder | None = None
_lock = threading.Lock()
_queries: dict[tuple[str, str], tuple[float, np.ndarray]] = {}
_last_fill_request: list[float] = []
_logged: set[str] = set()


def provider_embedder_install(embedder: Embedder | None) -> None:
    global _embedder
    _embedder = embedder


def embeddings_model() -> str:
    """The embedding model set (CINDY_RECALL_EMBEDDINGS), or "" when provider embeddings are off."""
    return (getattr(settings, "CINDY_RECALL_EMBEDDINGS", "") or "").strip()


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def to_blob(values: Sequence[float]) -> bytes:
    """A provider's vector as stored: scaled to unit length (a reduced-dimension Gemini vector is
    not), float16."""
    import numpy as np

    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(STORED_DTYPE).tobytes()


def entries_missing(model: str, *, limit: int) -> list[tuple[int, str]]:
    """(entry id, text) of the newest entries without a vector of `model`, at most `limit`."""
    connection = connections[router.db_for_read(RecallEntry)]
    q = connection.ops.quote_name
    entries, vectors = rows.table(RecallEntry), rows.table(RecallProviderVector)
    sql = (
        f"SELECT e.{q('id')}, e.{q('text')} FROM {entries} e LEFT JOIN {vectors} v "  # noqa: S608
        f"ON v.{q('entry_id')} = e.{q('id')} AND v.{q('model')} = %s "
        f"WHERE v.{q('id')} IS NULL ORDER BY e.{q('id')} DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [model, limit])
        return list(cursor.fetchall())


def vectors_store(model: str, embedded: Sequence[tuple[int, str, Sequence[float]]]) -> int:
    """Store (entry id, text embedded, vector) rows of `model`; an entry deleted meanwhile is skipped,
    one that has a vector of `model` already keeps it. Returns how many were given."""
    if not embedded:
        return 0
    alive = set(RecallEntry.objects.filter(pk__in=[e for e, _, _ in embedded]).values_list("pk", flat=True))
    RecallProviderVector.objects.bulk_create(
        [
            RecallProviderVector(
                entry_id=entry_id, model=model, digest=text_digest(text), vector=to_blob(vector)
            )
            for entry_id, text, vector in embedded
            if entry_id in alive
        ],
        ignore_conflicts=True,
    )
    return len(embedded)


def fill_claim(model: str, *, seconds: float) -> bool:
    """Claim the fill of `model` for `seconds` (a compare-and-set update: one worker wins); False
    while another run holds it."""
    at = now()
    try:
        with transaction.atomic():
            RecallEmbeddingFill.objects.get_or_create(model=model)
    except IntegrityError:
        pass  # another worker made the row at the same moment
    free = RecallEmbeddingFill.objects.filter(model=model).filter(
        models.Q(claimed_until=None) | models.Q(claimed_until__lte=at)
    )
    return free.update(claimed_until=at + dt.timedelta(seconds=seconds), updated=at) == 1


def fill_release(model: str, *, embedded: int) -> None:
    """End a run of the fill of `model` that embedded `embedded` entries."""
    RecallEmbeddingFill.objects.filter(model=model).update(
        claimed_until=None, embedded=models.F("embedded") + embedded, updated=now()
    )


def nearest_provider_entries(
    *,
    agent_id: int,
    query: str,
    conversation: Conversation | None,
    kinds: Collection[str] | None,
    depth: int,
    messages_before: int | None = None,
    other_dms: bool = False,
) -> list[tuple[int, float]] | None:
    """(entry id, cosine similarity) of the `depth` scanned entries nearest `query` by the provider's
    vectors, nearest first; None when provider embeddings are off or the query could not be embedded
    (the search goes on without this ranking)."""
    import numpy as np

    model = embeddings_model()
    if not model or _embedder is None:
        return None
    wanted = _query_vector(model, query, agent_id)
    if wanted is None:
        return None
    parts = scope_parts(
        agent_id=agent_id,
        conversation=conversation,
        kinds=kinds,
        messages_before=messages_before,
        other_dms=other_dms,
    )
    scanned = _scan(model, parts)
    _fill_if_missing(model, parts)
    size = wanted.shape[0] * 2
    scanned = [row for row in scanned if len(row[1]) == size]  # another dimension: not comparable
    if not scanned:
        return []
    ids = np.array([entry_id for entry_id, _, _ in scanned], dtype=np.int64)
    matrix = np.frombuffer(b"".join(bytes(blob) for _, blob, _ in scanned), dtype=STORED_DTYPE)
    similarity = matrix.reshape(len(scanned), -1).astype(np.float32) @ wanted
    close = similarity >= MIN_SIMILARITY
    ids, similarity = ids[close], similarity[close]
    digests = {entry_id: digest for entry_id, _, digest in scanned}
    # The candidates: a few times `depth`, so that stale vectors dropped below still leave `depth`.
    if len(ids) > 4 * depth:
        best = np.argpartition(-similarity, 4 * depth - 1)[: 4 * depth]
        ids, similarity = ids[best], similarity[best]
    order = np.lexsort((-ids, -similarity))
    ranked = [(int(ids[i]), float(similarity[i])) for i in order]
    # The best, checked against their entries' texts now: a vector of an older text is dropped.
    kept: list[tuple[int, float]] = []
    while ranked and len(kept) < depth:
        head, ranked = ranked[: 2 * depth], ranked[2 * depth :]
        stale = _stale(head, digests)
        if stale:
            RecallProviderVector.objects.filter(entry_id__in=stale, model=model).delete()
        kept += [(entry_id, score) for entry_id, score in head if entry_id not in stale]
    return kept[:depth]


def _query_vector(model: str, query: str, agent_id: int) -> np.ndarray | None:
    import numpy as np

    clock = get_clock()
    key = (model, query)
    with _lock:
        cached = _queries.get(key)
    if cached is not None and cached[0] > clock.monotonic():
        return cached[1]
    try:
        values = _embedder.embed([query], model=model, purpose="query", agent_id=agent_id)[0]
    except Exception as exc:  # noqa: BLE001 - whatever the provider did, the search goes on without it
        _log_once(
            f"{model}: {type(exc).__name__}",
            "recall: the %s query embedding failed (%s); searching without it",
            model,
            exc,
        )
        return None
    vector = np.frombuffer(to_blob(values), dtype=STORED_DTYPE).astype(np.float32)
    if not vector.any():
        return None
    with _lock:
        if len(_queries) >= QUERY_CACHE_SIZE:
            now = clock.monotonic()
            for stale in [k for k, (until, _) in _queries.items() if until <= now] or list(_queries)[:1]:
                _queries.pop(stale, None)
        _queries[key] = (clock.monotonic() + QUERY_CACHE_SECONDS, vector)
    return vector


def _scan(model: str, parts: list[tuple[str, list]]) -> list[tuple[int, bytes, str]]:
    """(entry id, vector, digest) of `model` for the most recent entries of each scope part that have one."""
    connection = connections[router.db_for_read(RecallEntry)]
    q = connection.ops.quote_name
    entries, vectors = rows.table(RecallEntry), rows.table(RecallProviderVector)
    found: list[tuple[int, bytes, str]] = []
    with connection.cursor() as cursor:
        for where, values in parts:
            cursor.execute(
                f"SELECT e.{q('id')}, v.{q('vector')}, v.{q('digest')} FROM {entries} e "  # noqa: S608
                f"JOIN {vectors} v ON v.{q('entry_id')} = e.{q('id')} AND v.{q('model')} = %s "
                f"WHERE {where} ORDER BY e.{q('id')} DESC LIMIT %s",
                [model, *values, settings.CINDY_RECALL_VECTOR_SCAN],
            )
            found.extend(cursor.fetchall())
    return found


def _fill_if_missing(model: str, parts: list[tuple[str, list]]) -> None:
    """Ask the worker for a fill when one of the scope's most recent entries has no vector of
    `model`: at most once per FILL_REQUEST_SECONDS per process (the check is one bounded read)."""
    clock = get_clock()
    with _lock:
        if _last_fill_request and clock.monotonic() - _last_fill_request[0] < FILL_REQUEST_SECONDS:
            return
        _last_fill_request[:] = [clock.monotonic()]
    connection = connections[router.db_for_read(RecallEntry)]
    q = connection.ops.quote_name
    entries, vectors = rows.table(RecallEntry), rows.table(RecallProviderVector)
    with connection.cursor() as cursor:
        for where, values in parts:
            cursor.execute(
                f"SELECT r.{q('id')} FROM (SELECT {q('id')} FROM {entries} WHERE {where} "  # noqa: S608
                f"ORDER BY {q('id')} DESC LIMIT %s) r LEFT JOIN {vectors} v "
                f"ON v.{q('entry_id')} = r.{q('id')} AND v.{q('model')} = %s WHERE v.{q('id')} IS NULL LIMIT 1",
                [*values, settings.CINDY_RECALL_VECTOR_SCAN, model],
            )
            if cursor.fetchone() is not None:
                try:
                    _embedder.request_fill()
                except Exception as exc:  # noqa: BLE001 - a queue that refuses must not stop a search
                    _log_once(
                        f"fill: {type(exc).__name__}", "recall: could not queue the %s fill (%s)", model, exc
                    )
                return


def _stale(head: list[tuple[int, float]], digests: dict[int, str]) -> set[int]:
    texts = dict(
        RecallEntry.objects.filter(pk__in=[entry_id for entry_id, _ in head]).values_list("pk", "text")
    )
    return {
        entry_id
        for entry_id, _ in head
        if entry_id not in texts or text_digest(texts[entry_id]) != digests[entry_id]
    }


def _log_once(key: str, message: str, *args: object) -> None:
    with _lock:
        if key in _logged:
            return
        _logged.add(key)
    logger.warning(message, *args)


def provider_state_reset() -> None:
    """Forget this process's query vectors, fill requests and logged errors (tests; a changed model)."""
    with _lock:
        _queries.clear()
        _last_fill_request.clear()
        _logged.clear()
