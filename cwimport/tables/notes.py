"""`notes` (called `curated_memories` before the original renamed it): what the agent noted about one
chat partner -> memory.Memory (kind curated, partner = the channel)."""

from __future__ import annotations

from cwimport.base import TableImporter
from cwimport.report import Outcome, RowError
from cwimport.tables.memories import upsert_memory
from memory.models import Memory


class NotesImporter(TableImporter):
    table = "notes"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        if not row.get("content"):
            raise RowError("content is empty")
        return upsert_memory(
            agent=agent,
            kind=Memory.Kind.CURATED,
            partner_id=int(row["channel_id"]),
            entry_id=row["id"],
            values={"content": row["content"], "created": self.when(row, "created")},
        )


class CuratedMemoriesImporter(NotesImporter):
    table = "curated_memories"
