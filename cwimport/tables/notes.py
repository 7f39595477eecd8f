"""`notes` (called `curated_memories` before the original renamed it): what the agent keeps about one
conversation -> memory.Note."""

from __future__ import annotations

from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome
from memory.models import Note


class NotesImporter(TableImporter):
    table = "notes"
    order_by = "agent_telegram_id, channel_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        values, create_only = self.content_and_created(row, agent)
        return upsert(
            Note,
            lookup={"agent": agent, "channel_id": int(row["channel_id"]), "entry_id": row["id"]},
            values=values,
            create_only=create_only,
        )


class CuratedMemoriesImporter(NotesImporter):
    table = "curated_memories"
