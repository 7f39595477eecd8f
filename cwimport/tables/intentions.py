"""`intentions`: what the agent means to do -> memory.Intention (kind intend, open)."""

from __future__ import annotations

from cindy_site import clock
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError
from memory.models import Intention


class IntentionsImporter(TableImporter):
    table = "intentions"
    order_by = "agent_telegram_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        if not row.get("content"):
            raise RowError("content is empty")
        values = {"content": row["content"]}
        created = self.when(row, "created")
        if created is not None:
            values["created"] = created
        return upsert(
            Intention,
            lookup={"agent": agent, "kind": Intention.Kind.INTEND, "entry_id": row["id"]},
            values=values,
            create_only=None if created else {"created": clock.now()},
        )
