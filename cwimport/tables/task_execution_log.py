"""`task_execution_log`: each action the original ran -> an ActivityEvent (node done, or node failed
when it has a failure message)."""

from __future__ import annotations

from conversations.models import ActivityEvent
from cwimport.base import TableImporter
from cwimport.report import Outcome, RowError
from cwimport.tables.agent_activity import history_event


class TaskExecutionLogImporter(TableImporter):
    table = "task_execution_log"
    order_by = "id"

    def import_row(self, row, agent) -> Outcome:
        when = self.when(row, "timestamp")
        if when is None:
            raise RowError("timestamp is empty")
        kind = (row.get("action_kind") or "").strip()
        if not kind:
            raise RowError("action_kind is empty")
        details = row.get("action_details") or ""
        failure = row.get("failure_message") or ""
        summary = f"{kind}: {failure}" if failure else (f"{kind}: {details}" if details else kind)
        return history_event(
            agent=agent,
            key=f"task_execution_log:{row['id']}",
            created=when,
            kind=ActivityEvent.Kind.NODE_FAILED if failure else ActivityEvent.Kind.NODE_DONE,
            channel_id=int(row["channel_telegram_id"]),
            summary=summary[:500],
            data={
                "table": "task_execution_log",
                "task_kind": kind,
                "task_identifier": row.get("task_identifier") or "",
                "details": details,
                "failure": failure,
            },
        )
