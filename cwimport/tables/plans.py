"""`plans`: the agent's plan for one channel -> memory.Plan."""

from __future__ import annotations

from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome
from memory.models import Plan


class PlansImporter(TableImporter):
    table = "plans"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        values, create_only = self.content_and_created(row, agent)
        return upsert(
            Plan,
            lookup={"agent": agent, "channel_id": int(row["channel_id"]), "plan_id": row["id"]},
            values=values,
            create_only=create_only,
        )
