"""`schedules`: each agent's daily schedule (a JSON list of activities) -> memory.ScheduleEntry rows."""

from __future__ import annotations

import hashlib

from django.db import transaction

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
        """Each valid activity becomes an entry; a bad one is reported (agent, date, reason) and skipped."""
        activities = json_value(row.get("activities"))
        if not isinstance(activities, list):
            raise RowError("activities is not a JSON list")
        zone = agent.timezone or row.get("timezone") or "UTC"
        outcomes = []
        for n, item in enumerate(activities, 1):
            try:
                outcomes.append(self._import_activity(item, n, agent=agent, zone=zone))
            except (RowError, TypeError, ValueError) as exc:
                day = str(item.get("start_time") or "")[:10] if isinstance(item, dict) else ""
                self.report.errors.append(
                    f"schedules agent {agent.name} ({row.get('agent_telegram_id')}), activity {n} on "
                    f"{day or 'an unknown date'}: {exc}; the other activities were imported"
                )
        for outcome in (Outcome.CREATED, Outcome.UPDATED):
            if outcome in outcomes:
                return outcome
        return Outcome.UNCHANGED

    def _import_activity(self, item, n: int, *, agent, zone: str) -> Outcome:
        if not isinstance(item, dict):
            raise RowError("not a JSON object")
        name = (item.get("activity_name") or item.get("activity") or "").strip()
        label = f"({name or 'unnamed'})"
        try:
            start = parse_entry_time(item.get("start_time"), agent_timezone=zone, name="start_time")
            end = parse_entry_time(item.get("end_time"), agent_timezone=zone, name="end_time")
        except TimeError as exc:
            raise RowError(f"{label} {exc}") from None
        if end <= start:
            raise RowError(f"{label} ends before it starts")
        responsiveness = item.get("responsiveness")
        with transaction.atomic():
            return upsert(
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
