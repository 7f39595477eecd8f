"""`memories`: the agent's global episodic memories -> memory.Memory (kind episodic)."""

from __future__ import annotations

from cwimport.base import TableImporter, json_value, upsert
from cwimport.report import Outcome, RowError
from memory.models import Memory

SOURCE_LABEL = "cw-telegram-agent database"


class MemoriesImporter(TableImporter):
    table = "memories"
    order_by = "agent_telegram_id, created, id"

    def import_row(self, row, agent) -> Outcome:
        content = row.get("content")
        if not content:
            raise RowError("content is empty")
        extra = dict(json_value(row.get("metadata")) or {})
        if row.get("creation_channel_username"):
            extra["creation_channel_username"] = row["creation_channel_username"]
        return upsert_memory(
            agent=agent,
            kind=Memory.Kind.EPISODIC,
            partner_id=None,
            entry_id=row["id"],
            values={
                "content": content,
                "created": self.local_when(row, "created", agent),
                "creation_channel": row.get("creation_channel") or "",
                "creation_channel_id": row.get("creation_channel_id"),
                "extra": extra,
            },
        )


def upsert_memory(*, agent, kind: str, partner_id: int | None, entry_id: str, values: dict) -> Outcome:
    return upsert(
        Memory,
        lookup={"agent": agent, "kind": kind, "partner_id": partner_id, "entry_id": entry_id},
        values=values,
        create_only={"source_file": SOURCE_LABEL},
    )
