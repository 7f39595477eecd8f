"""`in_ids`: a field among many integer ids, for the reads over every agent a gateway holds.

`filter(agent_id__in=ids)` prepares each value on its own (the lookup resolves it as a possible
expression, then converts it through the field): with the 1,000 agents of one gateway that is about
2 ms of CPU per read, and the gateway's steps run a dozen such reads every few seconds, all on its one
database thread. `filter(agent_id__in_ids=ids)` takes the ids as integers in one pass (0.6 ms for the
same read with 1,000 ids, SQLite, this machine's figures in docs/performance.md): same SQL, same
result, an empty collection matching nothing as `__in` does.

A custom lookup is Django's documented extension point ("How to write custom lookups"); it is
registered on every field in `CindySiteConfig.ready()`, and meant for integer columns (keys, foreign
keys). Pass `Ids(...)`, or any iterable of ints (read once).

`Ids` holds the ids where Django's filter building does not look: given a list or tuple, `filter()`
resolves each item as a possible expression, and on a relation (`agent_id`) checks each item's model;
at 1,000 ids that walk costs about as much again as the rest of the read. The gateway passes the ids of
the agents it holds as `Ids` (about ten such reads per full pass, every 5 seconds).
"""

from __future__ import annotations

from django.core.exceptions import EmptyResultSet
from django.db.models import ForeignKey, Lookup
from django.db.models.fields import Field


class Ids:
    """Integer ids for `in_ids`, converted once and opaque to `filter()`'s per-item walk (see the
    module docstring). Not iterable on purpose: read `values`."""

    __slots__ = ("values",)

    def __init__(self, ids) -> None:
        self.values: tuple[int, ...] = tuple(map(int, ids))

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"Ids({len(self.values)} ids)"


class InIds(Lookup):
    lookup_name = "in_ids"
    #: The ids are converted here, as a whole (`as_sql`), not one by one by the field.
    prepare_rhs = False

    def get_prep_lookup(self):
        if isinstance(self.rhs, Ids):
            return self.rhs.values
        return [int(value) for value in self.rhs]

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        ids = self.rhs
        if not ids:
            raise EmptyResultSet
        return f"{lhs} IN ({', '.join(['%s'] * len(ids))})", (*lhs_params, *ids)


def register() -> None:
    # A relation keeps lookups of its own (`agent__in_ids` goes through ForeignKey's, not Field's).
    for field in (Field, ForeignKey):
        field.register_lookup(InIds)
