"""`summaries`: summaries of past stretches of a conversation -> memory.Summary."""

from __future__ import annotations

from cindy_site import clock
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError
from memory.models import Summary


class SummariesImporter(TableImporter):
    table = "summaries"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        if not row.get("content"):
            raise RowError("content is empty")
        extra = {}
        for column in ("first_message_date", "last_message_date"):
            value = self.when(row, column)
            if value is not None:
                extra[column] = value.isoformat()
        values = {
            "content": row["content"],
            "first_message_id": row.get("min_message_id"),
            "last_message_id": row.get("max_message_id"),
            "extra": extra,
        }
        created = self.when(row, "created")
        if created is not None:
            values["created"] = created
        return upsert(
            Summary,
            lookup={"agent": agent, "channel_id": int(row["channel_id"]), "entry_id": row["id"]},
            values=values,
            create_only=None if created else {"created": clock.now()},
        )
