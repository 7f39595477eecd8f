"""`in_ids`: a field among many integer ids, for the reads over every agent a gateway holds.

`filter(agent_id__in=ids)` prepares each value on its own (the lookup resolves it as a possible
expression, then converts it through the field): with the 1,000 agents of one gateway that is about
2 ms of CPU per read, and the gateway's steps run a dozen such reads every few seconds, all on its one
database thread. `filter(agent_id__in_ids=ids)` takes the ids as integers in one pass (0.6 ms for the
same read with 1,000 ids, SQLite, this machine's figures in docs/performance.md): same SQL, same
result, an empty collection matching nothing as `__in` does.

A custom lookup is Django's documented extension point ("How to write custom lookups"); it is
registered on every field in `CindySiteConfig.ready()`, and meant for integer columns (keys, foreign
keys). Pass a set, a frozenset or a list of ints: any iterable is read once.
"""

from __future__ import annotations

from django.core.exceptions import EmptyResultSet
from django.db.models import ForeignKey, Lookup
from django.db.models.fields import Field


class InIds(Lookup):
    lookup_name = "in_ids"
    #: The ids are converted here, as a whole (`as_sql`), not one by one by the field.
    prepare_rhs = False

    def get_prep_lookup(self):
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
