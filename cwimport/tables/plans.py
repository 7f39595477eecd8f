"""`plans`: the agent's plan for one channel -> memory.Plan."""

from __future__ import annotations

from cindy_site import clock
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError
from memory.models import Plan


class PlansImporter(TableImporter):
    table = "plans"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        if not row.get("content"):
            raise RowError("content is empty")
        values = {"content": row["content"]}
        created = self.when(row, "created")
        if created is not None:
            values["created"] = created
        return upsert(
            Plan,
            lookup={"agent": agent, "channel_id": int(row["channel_id"]), "plan_id": row["id"]},
            values=values,
            create_only=None if created else {"created": clock.now()},
        )
