"""`conversation_llm_overrides`: the LLM chosen for one conversation -> Conversation.llm_model."""

from __future__ import annotations

from conversations.models import Conversation
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError


def peer_kind(peer_id: int) -> str:
    """A conversation kind from a Telegram peer id's sign: users are positive, chats negative."""
    return Conversation.Kind.DM if peer_id > 0 else Conversation.Kind.GROUP


class ConversationLLMOverridesImporter(TableImporter):
    table = "conversation_llm_overrides"
    order_by = "agent_telegram_id, channel_id"

    def row_id(self, row) -> str:
        return f"{row.get('agent_telegram_id')}/{row.get('channel_id')}"

    def import_row(self, row, agent) -> Outcome:
        model = (row.get("llm_model") or "").strip()
        if not model or len(model) > 100:
            raise RowError(f"llm_model {model!r} is empty or longer than 100 characters")
        peer_id = int(row["channel_id"])
        return upsert(
            Conversation,
            lookup={"agent": agent, "peer_id": peer_id},
            values={"llm_model": model},
            create_only={"kind": peer_kind(peer_id)},
        )
