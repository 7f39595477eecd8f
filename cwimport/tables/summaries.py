"""`summaries`: summaries of past stretches of a conversation -> memory.Summary."""

from __future__ import annotations

from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome
from memory.models import Summary


class SummariesImporter(TableImporter):
    table = "summaries"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        values, create_only = self.content_and_created(row)
        extra = {}
        for column in ("first_message_date", "last_message_date"):
            value = self.when(row, column)
            if value is not None:
                extra[column] = value.isoformat()
        values |= {
            "first_message_id": row.get("min_message_id"),
            "last_message_id": row.get("max_message_id"),
            "extra": extra,
        }
        return upsert(
            Summary,
            lookup={"agent": agent, "channel_id": int(row["channel_id"]), "entry_id": row["id"]},
            values=values,
            create_only=create_only,
        )
