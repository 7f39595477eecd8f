"""`schedules`: each agent's daily schedule (a JSON list of activities) -> memory.ScheduleEntry rows."""

from __future__ import annotations

import hashlib

from cindy_site import clock
from cwimport.base import TableImporter, json_value, upsert
from cwimport.report import Outcome, RowError
from memory.models import ScheduleEntry
from memory.schedule_times import TimeError, parse_entry_time


def _entry_id(item: dict) -> str:
    """The activity's id, or a stable one made from its start and name (older schedules had none)."""
    if item.get("id"):
        return str(item["id"])[:100]
    basis = f"{item.get('start_time')}|{item.get('activity_name')}"
    return "act-" + hashlib.sha1(basis.encode()).hexdigest()[:8]  # noqa: S324 (an id, not a secret)


class SchedulesImporter(TableImporter):
    table = "schedules"
    order_by = "agent_telegram_id"

    def row_id(self, row) -> str:
        return str(row.get("agent_telegram_id"))

    def import_row(self, row, agent) -> Outcome:
        activities = json_value(row.get("activities"))
        if not isinstance(activities, list):
            raise RowError("activities is not a JSON list")
        zone = agent.timezone or row.get("timezone") or "UTC"
        outcomes = []
        for n, item in enumerate(activities, 1):
            if not isinstance(item, dict):
                raise RowError(f"activity {n} is not an object")
            name = (item.get("activity_name") or item.get("activity") or "").strip()
            try:
                start = parse_entry_time(item.get("start_time"), agent_timezone=zone, name="start_time")
                end = parse_entry_time(item.get("end_time"), agent_timezone=zone, name="end_time")
            except TimeError as exc:
                raise RowError(f"activity {n} ({name or 'unnamed'}): {exc}") from None
            if end <= start:
                raise RowError(f"activity {n} ({name or 'unnamed'}) ends before it starts")
            responsiveness = item.get("responsiveness")
            outcomes.append(
                upsert(
                    ScheduleEntry,
                    lookup={"agent": agent, "entry_id": _entry_id(item)},
                    values={
                        "activity": name[:200],
                        "description": item.get("description") or "",
                        "start": start,
                        "end": end,
                        "responsiveness": min(max(int(responsiveness), 0), 100)
                        if responsiveness is not None
                        else 50,
                    },
                    create_only={"created": clock.now()},
                )
            )
        for outcome in (Outcome.CREATED, Outcome.UPDATED):
            if outcome in outcomes:
                return outcome
        return Outcome.UNCHANGED
