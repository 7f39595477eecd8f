"""`summaries`: summaries of past stretches of a conversation -> memory.Summary."""

from __future__ import annotations

from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome
from memory.models import Summary


class SummariesImporter(TableImporter):
    table = "summaries"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        values, create_only = self.content_and_created(row, agent)
        # Calendar dates (the original writes YYYY-MM-DD as midnight): the date as written, not shifted.
        first, last = self.when(row, "first_message_date"), self.when(row, "last_message_date")
        values |= {
            "first_message_id": row.get("min_message_id"),
            "last_message_id": row.get("max_message_id"),
            "first_message_date": first.date() if first else None,
            "last_message_date": last.date() if last else None,
        }
        return upsert(
            Summary,
            lookup={"agent": agent, "channel_id": int(row["channel_id"]), "entry_id": row["id"]},
            values=values,
            create_only=create_only,
        )
