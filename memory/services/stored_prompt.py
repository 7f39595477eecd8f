"""The stored entries a planning request shows, under the prompt budget for stored entries.

Without a budget every entry of a kind goes into every prompt, as in the original system: an agent
with 10,000 memories sends 1.4 million characters per turn and spends most of its CPU building a model
object per row. With `CINDY_STORED_ENTRIES_BUDGET_CHARS` set (the default), each budgeted kind shows
the entries the agent used most recently (by `StoredKind.recency_field`: created or last changed) up
to that many characters, and a line saying how many more are stored.

What a turn reads: rows in the ranking's order (ORDER BY + LIMIT, `values()` rows, never model
objects), about as many as the budget holds. The first query reads one row more than the budget holds
of typical entries (ENTRY_GUESS characters, at least BATCH rows), so a kind with no more rows is read
in that one statement; the fill (`_fill`) stops once MISSES rows in a row do not fit, so the rows past
the full point cost MISSES entries, not a batch. An agent with 10,000 memories makes three statements
(those rows, the few written since the history began, the scope's count from an index) and builds
about 112 entries per turn; one with 100 makes one statement and builds 100 (bench/RESULTS.md,
"Stored entries under the prompt budget").

The kept set depends only on the stored rows and the history's first message, never on the current
message, so consecutive turns keep the same prefix: it changes when an entry in it is written or when
the history start moves (a summary), as it did before.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from memory.stored_kinds import StoreContext, StoredKind, stored_kind

#: Rows the first query reads at least (a kind with no more is read in that one query, as without a
#: budget), and the most any later query reads.
BATCH = 100
#: The characters of a typical entry (a one-line memory with its id, date and channel): the first
#: query reads as many rows as the prefix's share of the budget holds of these, plus MISSES, so that a
#: budget of such entries is filled in one query.
ENTRY_GUESS = 200
#: Rows in a row that do not fit in what is left of a budget before a kind stops looking further down
#: its ranking for an entry short enough: the budget is as good as full.
MISSES = 10
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
    2. Entries dated up to `boundary` (or undated): the most recently used first, each kept if it
       still fits in PREFIX_SHARE of the budget, until the budget is full or MISSES rows in a row did
       not fit (`_fill`); `older_left_out` counts the rest.
    3. Entries dated after `boundary`: the same, the newest first, in what step 2 left of the budget.
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
    # One row more than `reading` says whether there are more: then every row is in hand.
    reading = max(BATCH, prefix_budget // ENTRY_GUESS + MISSES)
    first = [SimpleNamespace(**row) for row in rows.order_by(*recency).values(*columns)[: reading + 1]]
    complete = len(first) <= reading
    older_first, newer_first = _split(spec, first, boundary)
    older_query, newer_query = rows, rows.none()
    if boundary is not None:
        created = spec.created_field
        older_query = rows.filter(Q(**{f"{created}__lte": boundary}) | Q(**{f"{created}__isnull": True}))
        newer_query = rows.filter(**{f"{created}__gt": boundary})
    # The first query's older rows are the first of the older ranking (the same order, filtered): the
    # older entries' queries go on after them.
    older = _fill(
        spec,
        _Ranking(older_query.order_by(*recency), columns, older_first, complete),
        prefix_budget,
        context,
        hide_foreign_ids,
    )
    newer = _fill(
        spec,
        # Only entries written since the history began: ranked by creation, which an index narrows
        # to those few rows, where ranking by the recency field would walk every row of the scope.
        _Ranking(
            newer_query.order_by(f"-{spec.created_field}", "-pk"),
            columns,
            _newest_first(spec, newer_first) if complete else None,
            complete,
        ),
        budget - older.used,
        context,
        hide_foreign_ids,
    )
    if complete:
        older_total, newer_total = len(older_first), len(newer_first)
    else:
        newer_total = newer.seen if newer.exhausted else newer_query.count()
        # The whole scope's count reads only the index; the entries since the boundary are few.
        older_total = older.seen if older.exhausted else rows.count() - newer_total
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


def _newest_first(spec: StoredKind, rows: list[SimpleNamespace]) -> list[SimpleNamespace]:
    """Rows dated after the boundary (never undated) as the newer entries' query ranks them."""
    pk = spec.model._meta.pk.attname
    return sorted(rows, key=lambda row: (getattr(row, spec.created_field), getattr(row, pk)), reverse=True)


class _Ranking:
    """A ranked query's rows, read as they are asked for: `first` (its first rows, already read;
    `complete`: they are all of them), then `limit` rows per query from where they end."""

    def __init__(
        self,
        ranked: QuerySet,
        columns: list[str],
        first: list[SimpleNamespace] | None = None,
        complete: bool = False,
    ) -> None:
        self.ranked, self.columns = ranked, columns
        self.rows = list(first or ())
        self.complete = complete

    def read(self, limit: int) -> bool:
        """Read up to `limit` more rows into `rows`; whether any came."""
        if self.complete:
            return False
        start = len(self.rows)
        batch = [SimpleNamespace(**row) for row in self.ranked.values(*self.columns)[start : start + limit]]
        self.rows.extend(batch)
        self.complete = len(batch) < limit
        return bool(batch)


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
    spec: StoredKind, ranking: _Ranking, budget: int, context: StoreContext, hide_foreign_ids: bool
) -> _Filled:
    """The most recently used entries that fit in `budget` characters, in the kind's order.

    Going down `ranking` (the most recent first, the pk breaking ties), each row is kept if its entry
    fits in what is left, until the budget is full, the rows end, or MISSES rows in a row did not fit
    (a shorter entry further down could, but is rarely there). The rule is per row, so the choice is
    the same on every call for the same rows, however they are read; rows are read as the rule needs
    them: a query asks for about as many as could still fit (by the kept entries' mean size), plus the
    misses still allowed, so rows past the full point cost MISSES rows, not a batch."""
    kept: list[tuple[SimpleNamespace, dict[str, Any]]] = []
    used = misses = seen = 0
    exhausted = False
    while used < budget and misses < MISSES:
        if seen == len(ranking.rows):
            wanted = BATCH if not kept else (budget - used) * len(kept) // used + MISSES - misses
            if not ranking.read(max(1, min(BATCH, wanted))):
                exhausted = True
                break
        row = ranking.rows[seen]
        seen += 1
        entry = _entry(spec, row, context, hide_foreign_ids)
        cost = entry_chars(entry)
        if used + cost <= budget:
            kept.append((row, entry))
            used += cost
            misses = 0
        else:
            misses += 1
    else:
        exhausted = seen == len(ranking.rows) and ranking.complete
    kept.sort(key=lambda pair: _order_key(spec, pair[0]))
    return _Filled([entry for _, entry in kept], used, seen, exhausted)


def _order_key(spec: StoredKind, row: SimpleNamespace) -> tuple:
    """The kind's ordering as a sort key; NULLs first, as SQLite and MariaDB sort them ascending."""
    return tuple((getattr(row, name) is not None, getattr(row, name)) for name in spec.ordering)
