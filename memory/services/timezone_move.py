"""An agent's timezone changed: its future events and schedule entries, kept as the operator chose.

Events and schedule entries are written in the agent's local time but stored as UTC instants
(`due_at`, `start`, `end`). The records concerned are the agent's future ones: events still due whose
time is in the agent's zone (an event with a zone of its own keeps it whatever the agent's is), and
schedule entries that have not ended. The choice (`agents.timezone_change.TimezoneChange`):

- keep_local_times: each instant moves to the same clock time in the new zone (09:00 stays 09:00);
- keep_instants: the instants stay; only an event's written time is rewritten in the new zone, so that
  editing it later (which reads that text again) does not move it.

An event's `time` text is rewritten whenever reading it in the new zone would give another first
occurrence than the one chosen; otherwise it is left as written.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import transaction

from agents.models import Agent
from agents.schedule import _zone
from agents.timezone_change import TimezoneChange
from cindy_site.clock import now as clock_now
from memory.models import ScheduledEvent, ScheduleEntry
from memory.schedule_times import TimeError, parse_event_time


@dataclass(frozen=True)
class LocalTimeRecords:
    events: int
    entries: int

    def describe(self) -> list[str]:
        parts = []
        if self.events:
            parts.append(f"{self.events} future event{'s' if self.events != 1 else ''}")
        if self.entries:
            parts.append(f"{self.entries} schedule entr{'ies' if self.entries != 1 else 'y'}")
        return parts


def _events(agent_id: int, at: dt.datetime):
    return ScheduledEvent.objects.filter(agent_id=agent_id, timezone="", due_at__gt=at)


def _entries(agent_id: int, at: dt.datetime):
    return ScheduleEntry.objects.filter(agent_id=agent_id, end__gt=at)


def local_time_records(*, agent_id: int, at: dt.datetime | None = None) -> LocalTimeRecords:
    """How many future events and schedule entries of the agent are in its local time."""
    at = at or clock_now()
    return LocalTimeRecords(events=_events(agent_id, at).count(), entries=_entries(agent_id, at).count())


def local_time_records_described(agent: Agent) -> list[str]:
    """For `agents.timezone_change.local_time_records_provide`: e.g. ["2 future events"]."""
    if agent.pk is None:
        return []
    return local_time_records(agent_id=agent.pk).describe()


def same_clock_time(instant: dt.datetime, *, old: dt.tzinfo, new: dt.tzinfo) -> dt.datetime:
    """The UTC instant showing in `new` the wall-clock time `instant` shows in `old`."""
    return instant.astimezone(old).replace(tzinfo=new).astimezone(dt.UTC)


def _event_time_text(event: ScheduledEvent, *, first: dt.datetime, new_name: str, new: dt.tzinfo) -> str:
    """The event's `time` text, rewritten (as local time in the new zone) only when reading it in the
    new zone would not give `first`."""
    try:
        if parse_event_time(event.time_raw, timezone="", agent_timezone=new_name) == first:
            return event.time_raw
    except TimeError:
        return event.time_raw
    return first.astimezone(new).replace(tzinfo=None).isoformat()


@transaction.atomic
def agent_local_times_move(
    *, agent: Agent, before: str, change: str, at: dt.datetime | None = None
) -> LocalTimeRecords:
    """Apply `change` to the agent's future events and schedule entries after its timezone went from
    `before` to `agent.timezone`; returns how many of each it went through.

    1. Each event in the agent's zone still due: with keep_local_times its `due_at` moves to the same
       clock time in the new zone; its written `time` is rewritten when it would read otherwise.
    2. With keep_local_times each entry not ended moves both ends the same way (an entry a daylight
       saving change would turn inside out keeps its length).
    Rows are updated in place (no `save()`), so an event keeps its count of firings.
    """
    at = at or clock_now()
    old, new = _zone(before), _zone(agent.timezone)
    keep_local = change == TimezoneChange.KEEP_LOCAL_TIMES
    events = list(_events(agent.pk, at).select_for_update())
    for event in events:
        due = same_clock_time(event.due_at, old=old, new=new) if keep_local else event.due_at
        try:
            first = parse_event_time(event.time_raw, timezone="", agent_timezone=before)
        except TimeError:
            first = None
        text = event.time_raw
        if first is not None:
            wanted = same_clock_time(first, old=old, new=new) if keep_local else first
            text = _event_time_text(event, first=wanted, new_name=agent.timezone, new=new)
        ScheduledEvent.objects.filter(pk=event.pk).update(due_at=due, time_raw=text)
    entries = list(_entries(agent.pk, at).select_for_update())
    if keep_local:
        for entry in entries:
            start = same_clock_time(entry.start, old=old, new=new)
            end = same_clock_time(entry.end, old=old, new=new)
            if end <= start:
                end = start + (entry.end - entry.start)
            ScheduleEntry.objects.filter(pk=entry.pk).update(start=start, end=end)
    return LocalTimeRecords(events=len(events), entries=len(entries))
