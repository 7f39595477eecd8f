"""`conversation_gagged`: conversations where the agent reads but does not act -> Conversation.gagged."""

from __future__ import annotations

from conversations.models import Conversation
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome
from cwimport.tables.conversation_llm_overrides import peer_kind


class ConversationGaggedImporter(TableImporter):
    table = "conversation_gagged"
    order_by = "agent_telegram_id, channel_id"

    def row_id(self, row) -> str:
        return f"{row.get('agent_telegram_id')}/{row.get('channel_id')}"

    def import_row(self, row, agent) -> Outcome:
        peer_id = int(row["channel_id"])
        return upsert(
            Conversation,
            lookup={"agent": agent, "peer_id": peer_id},
            values={"gagged": bool(row["is_gagged"])},
            create_only={"kind": peer_kind(peer_id)},
        )
