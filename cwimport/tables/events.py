"""`events`: scheduled intents for one conversation -> memory.ScheduledEvent.

The original keeps the next firing time (`time_utc`) and the occurrences still to come; Cindy keeps
the same as `time_raw` (UTC) and `occurrences`, and counts firings from zero after the switch.
"""

from __future__ import annotations

from cindy_site import clock
from cwimport.base import TableImporter, upsert
from cwimport.report import Outcome, RowError
from memory.models import ScheduledEvent
from memory.schedule_times import TimeError


class EventsImporter(TableImporter):
    table = "events"
    order_by = "agent_telegram_id, channel_id, time_utc, id"

    def import_row(self, row, agent) -> Outcome:
        due = self.when(row, "time_utc")
        if due is None:
            raise RowError("time_utc is empty")
        if not (row.get("intent") or "").strip():
            raise RowError("intent is empty")
        occurrences = row.get("occurrences")
        if occurrences is not None and int(occurrences) < 1:
            raise RowError(f"occurrences is {occurrences}: the event has no firing left")
        try:
            return upsert(
                ScheduledEvent,
                lookup={"agent": agent, "channel_id": int(row["channel_id"]), "entry_id": row["id"]},
                values={
                    "intent": row["intent"],
                    "time_raw": due.isoformat(),
                    "timezone": "",
                    "interval_raw": row.get("interval_value") or "",
                    "occurrences": int(occurrences) if occurrences is not None else None,
                },
                create_only={"created": clock.now()},
                save_all=True,  # its save() derives due_at and interval_seconds from the raw values
            )
        except TimeError as exc:
            raise RowError(str(exc)) from None
