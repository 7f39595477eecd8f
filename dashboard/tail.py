"""Tailing a table by auto-increment id without losing rows that commit out of order.

On MariaDB (InnoDB) an id is taken when a row is inserted but the row becomes visible when its
transaction commits: a worker may insert event 10, another event 11, and commit 11 first. A reader
that keeps only "the highest id seen" would move past 10 and never read it. `IdTail` keeps that
cursor and, in addition, the ids it jumped over (holes): the next reads ask for `id > cursor` or
`id IN holes`. A hole is filled when its row appears and forgotten after `HOLE_SECONDS` (ids are
also lost for good by rollbacks and deletions); at most `MAX_HOLES` are kept, the newest. Since a
row is only returned while it is above the cursor or still a hole, no row is delivered twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from cindy_site.clock import get_clock

#: How long an id skipped over is waited for. Transactions that write events are short.
HOLE_SECONDS = 30.0
#: The most holes kept (the newest), so a huge jump in ids cannot grow memory or the query.
MAX_HOLES = 1000
#: At start, ids missing among the last this many are treated as holes (commits still in flight).
START_WINDOW = 100


class IdTail:
    def __init__(self, *, cursor: int, present: Iterable[int] = ()) -> None:
        """Start at `cursor`; ids in the window below it that are not `present` are holes."""
        self.cursor = cursor
        self.holes: dict[int, float] = {}
        deadline = get_clock().monotonic() + HOLE_SECONDS
        present_ids = set(present)
        for missing in range(max(1, cursor - START_WINDOW + 1), cursor + 1):
            if missing not in present_ids:
                self.holes[missing] = deadline

    def hole_ids(self) -> list[int]:
        """The holes still waited for (expired ones are dropped first)."""
        at = get_clock().monotonic()
        for expired in [i for i, deadline in self.holes.items() if deadline <= at]:
            del self.holes[expired]
        return sorted(self.holes)

    def accept(self, ids: Iterable[int]) -> list[int]:
        """Record rows read (any order); return the ids that are new, in id order."""
        deadline = get_clock().monotonic() + HOLE_SECONDS
        new: list[int] = []
        for row_id in sorted(set(ids)):
            if row_id > self.cursor:
                for missing in range(max(self.cursor + 1, row_id - MAX_HOLES), row_id):
                    self.holes[missing] = deadline
                self.cursor = row_id
                new.append(row_id)
            elif self.holes.pop(row_id, None) is not None:
                new.append(row_id)
        if len(self.holes) > MAX_HOLES:
            for oldest in sorted(self.holes)[: len(self.holes) - MAX_HOLES]:
                del self.holes[oldest]
        return new
