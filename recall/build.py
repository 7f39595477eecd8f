"""Building the recall index for data that is already there (`manage.py recall_index`).

Ingest keeps the index current from the moment the recall app is installed; what came before, and
what bulk paths wrote without signals (an imported curated memory file, a history loaded with
`bulk_create`), is indexed here. The build goes agent by agent and kind by kind in primary-key
order, a batch at a time. Each batch is one transaction that writes its entries and moves the
agent's `RecallBuild` mark past its last row, so a build stopped anywhere (Ctrl-C, a crash) resumes
after the last batch it committed, and indexing a row twice only rewrites its entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models, transaction

from agents.models import Agent, AgentDocument
from cindy_site.clock import now
from conversations.models import Message
from memory.models import Intention, Memory, Note, Plan, Summary
from recall.embedding import embed, to_blob, vectors_enabled
from recall.models import EntryKind, RecallBuild, RecallEntry
from recall.services import descriptions_of, document_index, entries_delete, entries_write
from recall.sources import media_unique_ids, message_entry, message_indexed, stored_entry

#: The kinds in the order a build indexes them.
BUILD_ORDER = (
    EntryKind.MESSAGE,
    EntryKind.SUMMARY,
    EntryKind.NOTE,
    EntryKind.PLAN,
    EntryKind.MEMORY,
    EntryKind.INTENTION,
    EntryKind.DOCUMENT,
)
#: Rows read per batch (and per transaction).
DEFAULT_BATCH = 500
#: Entries written per statement (12 parameters each, within SQLite's limit of 32,766).
WRITE_CHUNK = 200

_STORED: dict[str, type[models.Model]] = {
    EntryKind.SUMMARY: Summary,
    EntryKind.NOTE: Note,
    EntryKind.PLAN: Plan,
    EntryKind.MEMORY: Memory,
    EntryKind.INTENTION: Intention,
}


@dataclass(frozen=True)
class BatchOutcome:
    kind: str
    rows: int  # source rows read (0: the kind is done for this agent)
    entries: int  # entries written
    last_source_id: int


def build_forget(*, agent: Agent) -> int:
    """Start the agent's index over: its entries and its build marks are deleted."""
    with transaction.atomic():
        RecallBuild.objects.filter(agent=agent).delete()
        return RecallEntry.objects.filter(agent=agent).delete()[0]


def build_mark(*, agent: Agent, kind: str) -> RecallBuild:
    mark, _ = RecallBuild.objects.get_or_create(agent=agent, kind=kind)
    return mark


def build_batch(*, agent: Agent, kind: str, batch: int = DEFAULT_BATCH) -> BatchOutcome:
    """Index the agent's next `batch` rows of `kind` after its build mark, and move the mark.

    1. Lock the mark (`select_for_update`), so that two builds of one agent do not interleave.
    2. Read up to `batch` source rows after it, in primary-key order.
    3. Write their entries (and drop the entries of rows recall leaves out: deleted messages, ...).
    4. Move the mark to the last row read, in the same transaction.
    """
    with transaction.atomic():
        build_mark(agent=agent, kind=kind)
        mark = RecallBuild.objects.select_for_update().get(agent=agent, kind=kind)
        if kind == EntryKind.MESSAGE:
            read, written = _messages(agent=agent, after=mark.last_source_id, batch=batch)
        elif kind == EntryKind.DOCUMENT:
            read, written = _documents(agent=agent, after=mark.last_source_id, batch=batch)
        else:
            read, written = _stored(agent=agent, kind=kind, after=mark.last_source_id, batch=batch)
        if read:
            mark.last_source_id = read[-1]
            mark.indexed += written
            mark.save(update_fields=["last_source_id", "indexed", "updated"])
    return BatchOutcome(kind, len(read), written, mark.last_source_id)


def build_kind(*, agent: Agent, kind: str, batch: int = DEFAULT_BATCH) -> int:
    """Index every row of `kind` after the agent's build mark, batch by batch; returns the entries
    written. For writers that bypass the signals (an import's `bulk_create`) to catch up at once."""
    written = 0
    while (outcome := build_batch(agent=agent, kind=kind, batch=batch)).rows:
        written += outcome.entries
    return written


def _write(entries: list) -> int:
    for start in range(0, len(entries), WRITE_CHUNK):
        entries_write(entries[start : start + WRITE_CHUNK])
    return len(entries)


def _messages(*, agent: Agent, after: int, batch: int) -> tuple[list[int], int]:
    messages = list(
        Message.objects.filter(conversation__agent=agent, pk__gt=after)
        .select_related("conversation")
        .order_by("pk")[:batch]
    )
    descriptions = descriptions_of(uid for m in messages for uid in media_unique_ids(m))
    entries, dropped = [], []
    for message in messages:
        entry = None
        if message_indexed(message.conversation, message):
            entry = message_entry(message.conversation, message, descriptions)
        if entry is not None and entry.text:
            entries.append(entry)
        else:
            dropped.append(message.pk)
    entries_delete(kind=EntryKind.MESSAGE, source_ids=dropped)
    return [m.pk for m in messages], _write(entries)


def _stored(*, agent: Agent, kind: str, after: int, batch: int) -> tuple[list[int], int]:
    model = _STORED[kind]
    found = list(model.objects.filter(agent=agent, pk__gt=after).order_by("pk")[:batch])
    at = now()
    entries, dropped = [], []
    for row in found:
        entry = stored_entry(row, fallback_date=at)
        if entry is None:
            dropped.append(row.pk)
            continue
        entries.append(entry)
    entries_delete(kind=kind, source_ids=dropped)
    return [row.pk for row in found], _write(entries)


def _documents(*, agent: Agent, after: int, batch: int) -> tuple[list[int], int]:
    documents = list(AgentDocument.objects.filter(agent=agent, pk__gt=after).order_by("pk")[:batch])
    return [d.pk for d in documents], sum(document_index(document=d) for d in documents)


def vectors_batch(*, agent: Agent, batch: int = DEFAULT_BATCH) -> int:
    """Give up to `batch` of the agent's entries without a vector theirs (entries written before
    vectors existed, or while CINDY_RECALL_VECTORS was off), in one transaction; returns how many
    (0: none is left, or vectors are off)."""
    if not vectors_enabled():
        return 0
    with transaction.atomic():
        found = list(
            RecallEntry.objects.select_for_update()
            .filter(agent=agent, vector__isnull=True)
            .order_by("pk")
            .only("pk", "text")[:batch]
        )
        for entry, vector in zip(found, embed([e.text for e in found]), strict=True):
            entry.vector = to_blob(vector)
        RecallEntry.objects.bulk_update(found, ["vector"], batch_size=WRITE_CHUNK)
    return len(found)
