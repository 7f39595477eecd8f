"""Writing the recall index: entries upserted and deleted as their sources change.

Ingest calls these for every message (`recall.receivers`), so the write is one plain statement per
message: an upsert on the entry's source (`INSERT ... ON CONFLICT` on SQLite, `INSERT ... ON
DUPLICATE KEY UPDATE` on MariaDB/MySQL) through the cursor. Built through the ORM it costs a
query compile per message; `recall/tests/test_ingest_cost.py` holds the whole per-message cost
under its budget. The full-text index follows by itself: SQLite's triggers (migration 0002) and
InnoDB's FULLTEXT index.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence

from django.db import connections, router

from agents.models import AgentDocument
from cindy_site import rows
from conversations.models import Conversation, Message
from media_catalog.models import MediaDescription
from memory.models import Intention, Memory, Note, Plan, Summary
from recall.embedding import embed, to_blob, vectors_enabled
from recall.fulltext import entry_terms, sqlite_terms
from recall.models import EntryKind, RecallEntry, RecallMediaWait
from recall.sources import (
    EntryValues,
    document_entries,
    media_unique_ids,
    message_entry,
    message_indexed,
    stored_entry,
)
from recall.stemming import terms

#: The columns an upsert writes, in order (`terms`: the words the full-text index reads besides the
#: text, `recall.fulltext`; `vector`: with CINDY_RECALL_VECTORS on).
COLUMNS = (
    "agent_id",
    "conversation_id",
    "peer_id",
    "topic_id",
    "kind",
    "source_id",
    "part",
    "message_id",
    "date",
    "text",
    "terms",
    "vector",
)
_KEY = ("kind", "source_id", "part")

StoredRow = Memory | Note | Summary | Plan | Intention


def entry_row(connection, e: EntryValues, vector: bytes | None) -> tuple:
    """The values of `e`'s row, in the order of `COLUMNS` (`terms`, `recall.fulltext`: its words plain
    and scoped on MariaDB/MySQL, scoped on SQLite)."""
    stems = terms(e.text).split()
    scope = {"agent_id": e.agent_id, "peer_id": e.peer_id, "topic_id": e.topic_id}
    return (
        e.agent_id,
        e.conversation_id,
        e.peer_id,
        e.topic_id,
        e.kind,
        e.source_id,
        e.part,
        e.message_id,
        connection.ops.adapt_datetimefield_value(e.date),
        e.text,
        entry_terms(stems, **scope) if connection.vendor == "mysql" else sqlite_terms(stems, **scope),
        vector,
    )


def entries_write(entries: Sequence[EntryValues], *, vectors: bool = True) -> int:
    """Create or replace `entries` (matched on kind, source and part) in one statement, with their
    vectors (embedded together) when `vectors`; returns how many were given.

    Without `vectors` (a message at ingest) the entries are written vectorless, and a rewritten
    entry loses its old vector: the search that scans it first gives it one (`vectors_fill`)."""
    if not entries:
        return 0
    connection = connections[router.db_for_write(RecallEntry)]
    if vectors and vectors_enabled():
        vectors = [to_blob(v) for v in embed([e.text for e in entries])]
    else:
        vectors = [None] * len(entries)
    params: list = []
    for e, vector in zip(entries, vectors, strict=True):
        params.extend(entry_row(connection, e, vector))
    with connection.cursor() as cursor:
        cursor.execute(
            rows.upsert_sql(RecallEntry, COLUMNS, _KEY, len(entries), using=connection.alias), params
        )
    return len(entries)


def vectors_fill(entry_ids: Sequence[int]) -> dict[int, bytes]:
    """Embed the entries `entry_ids` (those a search found without a vector) and store their
    vectors; returns the stored vectors by entry id. Two statements: the texts, then one UPDATE per
    entry in one `executemany` (on SQLite the full-text trigger ignores a vector-only update,
    migration 0006). An entry deleted meanwhile is skipped; one rewritten meanwhile keeps no vector
    of its old text (the UPDATE matches the text read)."""
    ids = sorted(set(entry_ids))
    if not ids or not vectors_enabled():
        return {}
    connection = connections[router.db_for_write(RecallEntry)]
    table = rows.table(RecallEntry, using=connection.alias)
    q = connection.ops.quote_name
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {q('id')}, {q('text')} FROM {table} WHERE {q('id')} IN ({marks})", ids)  # noqa: S608
        found = cursor.fetchall()
        if not found:
            return {}
        blobs = {
            entry_id: to_blob(v) for (entry_id, _), v in zip(found, embed([t for _, t in found]), strict=True)
        }
        cursor.executemany(
            f"UPDATE {table} SET {q('vector')} = %s WHERE {q('id')} = %s AND {q('text')} = %s",  # noqa: S608
            [(blobs[entry_id], entry_id, text) for entry_id, text in found],
        )
    return blobs


def entries_delete(*, kind: str, source_ids: Iterable[int], keep_parts: int | None = None) -> int:
    """Delete the entries of `kind` made from `source_ids` (with `keep_parts`: only the parts from
    that number on, a document that got shorter)."""
    ids = list(source_ids)
    if not ids:
        return 0
    entries = RecallEntry.objects.filter(kind=kind, source_id__in=ids)
    if keep_parts is not None:
        entries = entries.filter(part__gte=keep_parts)
    return entries.delete()[0]


def descriptions_of(unique_ids: Iterable[str]) -> dict[str, str]:
    """What the media catalog says the media show (or, for voice notes, say), by unique id."""
    ids = sorted(set(unique_ids))
    if not ids:
        return {}
    found = MediaDescription.objects.filter(unique_id__in=ids).exclude(description=None)
    return {uid: text for uid, text in found.values_list("unique_id", "description") if text}


def message_index(*, conversation: Conversation, message: Message) -> bool:
    """Index one message as it now is (or drop its entry: deleted, a service line, no text);
    returns whether it has an entry."""
    if message_indexed(conversation, message):
        unique_ids = media_unique_ids(message)
        descriptions = descriptions_of(unique_ids)
        if len(descriptions) < len(set(unique_ids)):
            _wait_for_descriptions(message, set(unique_ids) - set(descriptions))
        entry = message_entry(conversation, message, descriptions)
        if entry.text:
            # No vector here: this runs in the gateway's ingest, which then needs neither the model
            # nor its CPU; the first search that scans the entry embeds it (`vectors_fill`).
            entries_write([entry], vectors=False)
            return True
    entries_delete(kind=EntryKind.MESSAGE, source_ids=[message.pk])
    return False


def _wait_for_descriptions(message: Message, unique_ids: set[str]) -> None:
    RecallMediaWait.objects.bulk_create(
        [RecallMediaWait(message_id=message.pk, unique_id=uid[:128]) for uid in sorted(unique_ids)],
        ignore_conflicts=True,
    )


def media_described(*, unique_ids: Iterable[str]) -> int:
    """The media catalog has written (or given up on) descriptions of `unique_ids`: the messages
    indexed without them are indexed again, and stop waiting. Returns how many were."""
    ids = sorted(set(unique_ids))
    if not ids:
        return 0
    waits = RecallMediaWait.objects.filter(unique_id__in=ids)
    messages = Message.objects.filter(pk__in=waits.values("message_id")).select_related("conversation")
    found = list(messages)
    waits.delete()
    for message in found:
        message_index(conversation=message.conversation, message=message)
    return len(found)


def messages_unindex(*, message_pks: Iterable[int] = (), conversation_id: int | None = None) -> int:
    """Drop the entries of deleted messages, or of every message of a cleared conversation."""
    if conversation_id is not None:
        return RecallEntry.objects.filter(conversation_id=conversation_id, kind=EntryKind.MESSAGE).delete()[0]
    return entries_delete(kind=EntryKind.MESSAGE, source_ids=message_pks)


def _stored_kind(row: StoredRow) -> str:
    if isinstance(row, Memory):
        return EntryKind.MEMORY
    if isinstance(row, Intention):
        return EntryKind.INTENTION
    return {Note: EntryKind.NOTE, Summary: EntryKind.SUMMARY, Plan: EntryKind.PLAN}[type(row)]


def stored_index(*, row: StoredRow, at: dt.datetime) -> bool:
    """Index a memory, note, summary, plan or intention as it now is (or drop its entry when recall
    leaves it out); `at` dates an undated row. Returns whether it has an entry."""
    entry = stored_entry(row, fallback_date=at)
    if entry is None:
        entries_delete(kind=_stored_kind(row), source_ids=[row.pk])
        return False
    entries_write([entry])
    return True


def stored_unindex(*, row: StoredRow) -> int:
    return entries_delete(kind=_stored_kind(row), source_ids=[row.pk])


def document_index(*, document: AgentDocument) -> int:
    """Index an agent document's sections (dropping sections it no longer has); returns how many."""
    entries = document_entries(document)
    entries_write(entries)
    entries_delete(kind=EntryKind.DOCUMENT, source_ids=[document.pk], keep_parts=len(entries))
    return len(entries)


def document_unindex(*, document: AgentDocument) -> int:
    return entries_delete(kind=EntryKind.DOCUMENT, source_ids=[document.pk])
