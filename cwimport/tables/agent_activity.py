"""`agent_activity`: when the agent last sent to each channel -> an ActivityEvent (message out) at that
time, so the dashboard's history shows where each agent was active before the switch."""

from __future__ import annotations

from conversations.models import ActivityEvent, Conversation
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError

ORIGIN = "cw-telegram-agent"


def history_event(
    *, agent, key: str, created, kind: str, channel_id: int, summary: str, data: dict
) -> Outcome:
    """Create or refresh the one ActivityEvent that stands for source row `key`."""
    payload = {"imported_from": ORIGIN, "import_key": key, "channel_id": channel_id, **data}
    conversation = Conversation.objects.filter(agent=agent, peer_id=channel_id, topic_id=0).first()
    values = {
        "created": created,
        "kind": kind,
        "summary": summary,
        "data": payload,
        "conversation": conversation,
    }
    return upsert(ActivityEvent, lookup={"agent": agent, "data__import_key": key}, values=values)


class AgentActivityImporter(TableImporter):
    table = "agent_activity"
    order_by = "id"

    def import_row(self, row, agent) -> Outcome:
        sent = self.server_when(row, "last_send_time")
        if sent is None:
            raise RowError("last_send_time is empty")
        channel_id = int(row["channel_telegram_id"])
        return history_event(
            agent=agent,
            # The original keeps one row per (agent, channel) and moves its time: key on the pair.
            key=f"agent_activity:{row['agent_telegram_id']}:{channel_id}",
            created=sent,
            kind=ActivityEvent.Kind.MESSAGE_OUT,
            channel_id=channel_id,
            summary=f"last message sent to {channel_id} (before the switch)",
            data={"table": "agent_activity", "last_send_time": sent.isoformat()},
        )
