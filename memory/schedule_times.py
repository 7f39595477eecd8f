"""Times of events and schedule entries: reading the task's text, and an event's next firing.

- An event's `time` is an ISO 8601 date-time. Its `timezone` (an IANA name), when given, always wins:
  the date and clock time are read as local time there, any offset in the text is ignored (as the
  original does). Without it, an offset in the text is used, else the agent's timezone.
- `interval` is "<number> <unit>" with unit seconds, minutes, hours, days or weeks (singular or plural).
- Schedule entries' start and end are ISO 8601; without an offset they are read in the agent's timezone.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agents.schedule import _zone

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*$", re.IGNORECASE)
_UNITS = {
    "second": 1,
    "sec": 1,
    "minute": 60,
    "min": 60,
    "hour": 3600,
    "hr": 3600,
    "day": 86400,
    "week": 604800,
}
#: The shortest recurrence accepted: a tighter loop would only burn LLM calls.
MIN_INTERVAL_SECONDS = 60


class TimeError(ValueError):
    pass


def zone_named(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise TimeError(f'timezone "{name}" is not an IANA zone (e.g. Europe/London)') from None


def parse_event_time(raw: str, *, timezone: str, agent_timezone: str) -> dt.datetime:
    """The UTC instant an event's `time` names; TimeError says what is wrong."""
    text = (raw or "").strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise TimeError(f'"time" is "{raw}": give an ISO 8601 date-time, e.g. 2026-03-01T14:00:00') from None
    if timezone.strip():
        value = value.replace(tzinfo=zone_named(timezone))
    elif value.tzinfo is None:
        value = value.replace(tzinfo=_zone(agent_timezone))
    return value.astimezone(dt.UTC)


def parse_interval(raw: str) -> int:
    """Seconds in an `interval` such as "2 hours" or "1 week"; TimeError when unreadable or too short."""
    match = _INTERVAL.match(raw or "")
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise TimeError(f'"interval" is "{raw}": write a number and a unit, e.g. "30 minutes", "1 days"')
    seconds = int(float(match.group(1)) * _UNITS[unit])
    if seconds < MIN_INTERVAL_SECONDS:
        raise TimeError(f'"interval" is "{raw}": events recur at most once a minute')
    return seconds


def parse_entry_time(raw: Any, *, agent_timezone: str, name: str) -> dt.datetime:
    """A schedule entry's start or end as an aware datetime (naive values: the agent's timezone)."""
    if isinstance(raw, dt.datetime):
        value = raw
    else:
        text = str(raw or "").strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise TimeError(
                f'"{name}" is "{raw}": give an ISO 8601 date-time, e.g. 2026-03-01T09:00:00+01:00'
            ) from None
    return value if value.tzinfo else value.replace(tzinfo=_zone(agent_timezone))


def event_times_apply(event: Any) -> None:
    """Fill an event's interval seconds and, when its time, zone or interval changed, its `due_at`.

    A changed time restarts the event (fired_count 0). An unreadable value raises TimeError: the
    policy (`llm.policy`) refuses such tasks before they are stored, so this guards other writers.
    """
    event.interval_seconds = parse_interval(event.interval_raw) if event.interval_raw.strip() else None
    original = getattr(event, "_original_times", None)
    current = (event.time_raw, event.timezone, event.interval_raw)
    if original == current and event.pk is not None:
        return
    if event.time_raw.strip():
        event.due_at = parse_event_time(
            event.time_raw, timezone=event.timezone, agent_timezone=event.agent.timezone
        )
        event.fired_count = 0
    event._original_times = current


def event_next_due(event: Any, *, after: dt.datetime) -> dt.datetime | None:
    """When a fired event fires next: the first step of its interval later than `after`, or None.

    Steps missed while no gateway ran (or the clock jumped) are skipped, not fired in a burst.
    """
    if not event.interval_seconds or event.due_at is None:
        return None
    if event.occurrences is not None and event.fired_count + 1 >= event.occurrences:
        return None
    step = dt.timedelta(seconds=event.interval_seconds)
    missed = max(0, int((after - event.due_at) / step))
    following = event.due_at + step * (missed + 1)
    return following
