"""`intentions`: what the agent means to do -> memory.Intention (kind intend, open)."""

from __future__ import annotations

from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome
from memory.models import Intention


class IntentionsImporter(TableImporter):
    table = "intentions"
    order_by = "agent_telegram_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        values, create_only = self.content_and_created(row, agent)
        return upsert(
            Intention,
            lookup={"agent": agent, "kind": Intention.Kind.INTEND, "entry_id": row["id"]},
            values=values,
            create_only=create_only,
        )
