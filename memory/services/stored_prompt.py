"""The stored entries a planning request shows, under the prompt budget for stored entries.

Without a budget every entry of a kind goes into every prompt, as in the original system: an agent
with 10,000 memories sends 1.4 million characters per turn and spends most of its CPU building a model
object per row. With `CINDY_STORED_ENTRIES_BUDGET_CHARS` set (the default), each budgeted kind shows
the entries the agent used most recently (by `StoredKind.recency_field`: created or last changed) up
to that many characters, and a line saying how many more are stored. Only rows that can fit are read
(ORDER BY + LIMIT, `values()` rows), so a turn costs the same at 100 and at 10,000 entries.

The kept set depends only on the stored rows and the history's first message, never on the current
message, so consecutive turns keep the same prefix: it changes when an entry in it is written or when
the history start moves (a summary), as it did before.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from memory.stored_kinds import StoreContext, StoredKind, stored_kind

#: Rows read per query while filling a budget: about what a 30,000-character budget keeps of
#: one-line memories in a few queries, without reading rows that cannot fit.
BATCH = 100
#: The share of a kind's budget its entries dated up to the history's first message (the system
#: instruction) may take; the rest stays free for the entries written since (after the history), so
#: a newly written entry is always seen and never pushes an older one out of the cached prefix.
PREFIX_SHARE = 0.75


@dataclass(frozen=True)
class PromptEntries:
    """A kind's entries for one request: `older` for the system instruction, `newer` for after the
    history, each in the kind's order, and how many of each were left out under the budget."""

    older: list[dict[str, Any]] = field(default_factory=list)
    newer: list[dict[str, Any]] = field(default_factory=list)
    older_left_out: int = 0
    newer_left_out: int = 0


def stored_entries_budget() -> int:
    """The characters of entries one budgeted kind may show per request; 0 means no budget."""
    return int(getattr(settings, "CINDY_STORED_ENTRIES_BUDGET_CHARS", 0) or 0)


def entry_chars(entry: dict[str, Any]) -> int:
    """What one entry adds to its section's JSON list as `json.dumps(indent=2)` writes it: its compact
    JSON (the C encoder: indenting falls back to pure Python, 5x slower), plus the line break and four
    spaces before each field, its braces' lines and the separator. Exact for flat entries (every
    kind's are), so kept entries add up to at most the section's list text."""
    return len(json.dumps(entry, ensure_ascii=False)) + 4 * len(entry) + 8


def stored_prompt_entries(
    *,
    kind: str,
    context: StoreContext,
    boundary: dt.datetime | None,
    hide_foreign_ids: bool = False,
    budget: int | None = None,
) -> PromptEntries:
    """The kind's entries in `context`, split at `boundary` (see `stored.stored_entries_split`), under
    the budget (`budget`, or the setting when None; 0 = every entry).

    1. A kind without `budgeted` (summaries), or no budget: every entry, as before.
    2. Entries dated up to `boundary` (or undated): the most recently used first, read BATCH rows at a
       time, each kept if it still fits in PREFIX_SHARE of the budget, until the budget is full or a
       batch keeps nothing; `older_left_out` counts the rest.
    3. Entries dated after `boundary`: the same, in what step 2 left of the budget.
    4. Both lists are shown in the kind's own order (`StoredKind.ordering`).
    """
    spec = stored_kind(kind)
    if spec is None:
        return PromptEntries()
    budget = stored_entries_budget() if budget is None else budget
    rows = spec.model.objects.filter(**spec.scope(context))
    columns = list(spec.prompt_fields) or [f.attname for f in spec.model._meta.concrete_fields]
    if budget <= 0 or not spec.budgeted:
        every = [SimpleNamespace(**row) for row in rows.order_by(*spec.ordering).values(*columns)]
        older, newer = _split(spec, every, boundary)
        return PromptEntries(
            older=[_entry(spec, row, context, hide_foreign_ids) for row in older],
            newer=[_entry(spec, row, context, hide_foreign_ids) for row in newer],
        )
    prefix_budget = int(budget * PREFIX_SHARE)
    recency = (f"-{spec.recency_field}", "-pk")
    first = [SimpleNamespace(**row) for row in rows.order_by(*recency).values(*columns)[:BATCH]]
    if len(first) < BATCH:  # every row in hand (most agents): one query, as without a budget
        older_rows, newer_rows = _split(spec, first, boundary)
        older = _fill(spec, iter([(older_rows, True)]), prefix_budget, context, hide_foreign_ids)
        newer = _fill(spec, iter([(newer_rows, True)]), budget - older.used, context, hide_foreign_ids)
        return PromptEntries(
            older.entries,
            newer.entries,
            len(older_rows) - len(older.entries),
            len(newer_rows) - len(newer.entries),
        )
    older_query, newer_query = rows, rows.none()
    if boundary is not None:
        created = spec.created_field
        older_query = rows.filter(Q(**{f"{created}__lte": boundary}) | Q(**{f"{created}__isnull": True}))
        newer_query = rows.filter(**{f"{created}__gt": boundary})
    # The first query's older rows are the first of the older ranking (the same order, filtered): the
    # older entries' queries go on after them.
    older_first = first if boundary is None else _split(spec, first, boundary)[0]
    older = _fill(
        spec,
        _batches(older_query.order_by(*recency), columns, older_first),
        prefix_budget,
        context,
        hide_foreign_ids,
    )
    newer = _fill(
        spec,
        # Only entries written since the history began: ranked by creation, which an index narrows
        # to those few rows, where ranking by the recency field would walk every row of the scope.
        _batches(newer_query.order_by(f"-{spec.created_field}", "-pk"), columns),
        budget - older.used,
        context,
        hide_foreign_ids,
    )
    newer_total = newer.seen if newer.exhausted else newer_query.count()
    if older.exhausted:
        older_total = older.seen
    else:
        # The whole scope's count reads only the index; the entries since the boundary are few.
        older_total = rows.count() - newer_total
    return PromptEntries(
        older.entries, newer.entries, older_total - len(older.entries), newer_total - len(newer.entries)
    )


def _split(
    spec: StoredKind, rows: list[SimpleNamespace], boundary: dt.datetime | None
) -> tuple[list[SimpleNamespace], list[SimpleNamespace]]:
    """`rows` dated up to `boundary` (or undated), and those dated after it, each in the order given."""
    older: list[SimpleNamespace] = []
    newer: list[SimpleNamespace] = []
    for row in rows:
        created = getattr(row, spec.created_field)
        (newer if boundary is not None and created is not None and created > boundary else older).append(row)
    return older, newer


def _batches(
    ranked: QuerySet, columns: list[str], first: list[SimpleNamespace] | None = None
) -> Iterator[tuple[list[SimpleNamespace], bool]]:
    """`ranked` BATCH rows per query, each with whether it is the last (a short batch). `first`: its
    first rows, already read (their count may be anything): the queries start after them."""
    read = 0
    if first:
        read = len(first)
        yield first, False
    while True:
        batch = [SimpleNamespace(**row) for row in ranked.values(*columns)[read : read + BATCH]]
        read += len(batch)
        yield batch, len(batch) < BATCH
        if len(batch) < BATCH:
            return


def _entry(
    spec: StoredKind, row: SimpleNamespace, context: StoreContext, hide_foreign_ids: bool
) -> dict[str, Any]:
    entry = spec.section_entry(row)
    if hide_foreign_ids and not spec.entry_owned_by(row, context.channel_id):
        entry = {k: v for k, v in entry.items() if k != "id"}
    return entry


@dataclass(frozen=True)
class _Filled:
    entries: list[dict[str, Any]]
    used: int  # characters
    seen: int  # rows read
    exhausted: bool  # whether every row was read


def _fill(
    spec: StoredKind,
    batches: Iterator[tuple[list[SimpleNamespace], bool]],
    budget: int,
    context: StoreContext,
    hide_foreign_ids: bool,
) -> _Filled:
    """The most recently used entries that fit in `budget` characters, from `batches` (rows ranked
    most recent first, the pk breaking ties, so the choice is the same on every call for the same
    rows), in the kind's order. It stops when the budget is full or a batch keeps nothing."""
    kept: list[tuple[SimpleNamespace, dict[str, Any]]] = []
    used = seen = 0
    exhausted = False
    while budget - used > 0 and not exhausted:
        batch, exhausted = next(batches)
        seen += len(batch)
        before = len(kept)
        for row in batch:
            entry = _entry(spec, row, context, hide_foreign_ids)
            cost = entry_chars(entry)
            if used + cost <= budget:
                kept.append((row, entry))
                used += cost
        if len(kept) == before:  # nothing more fits, or only rows too long for what is left
            break
    kept.sort(key=lambda pair: _order_key(spec, pair[0]))
    return _Filled([entry for _, entry in kept], used, seen, exhausted)


def _order_key(spec: StoredKind, row: SimpleNamespace) -> tuple:
    """The kind's ordering as a sort key; NULLs first, as SQLite and MariaDB sort them ascending."""
    return tuple((getattr(row, name) is not None, getattr(row, name)) for name in spec.ordering)
