"""When an agent is asleep, read from the "Daily Schedule" section of its persona.

The section is free text for the LLM, plus optional machine-readable lines of the form

    Asleep: 22:30-07:15
    Asleep: 13:00-14:00, 23:00-06:30

(`Sleep:` works too; en dashes and "to" are accepted; such a line without clock times stays free
text). Times are in the agent's timezone and a
window may cross midnight. While an agent is asleep the tick runs none of its nodes: messages are
still recorded and replanned, and the plan runs when it wakes, so a night's burst costs one call.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings

_LINE = re.compile(r"^\s*[-*]?\s*(?:asleep|sleep)\s*:\s*(?P<windows>.*)$", re.IGNORECASE)
_CLOCK = re.compile(r"\d{1,2}:\d{2}")
_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*(?:-|–|—|to)\s*(\d{1,2}):(\d{2})\s*$", re.IGNORECASE)


class ScheduleError(ValueError):
    pass


@dataclass(frozen=True)
class SleepWindow:
    start: dt.time
    end: dt.time

    def contains(self, moment: dt.time) -> bool:
        if self.start <= self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end  # crosses midnight


def _time(hour: str, minute: str, raw: str) -> dt.time:
    h, m = int(hour), int(minute)
    if h > 23 or m > 59:
        raise ScheduleError(f'"{raw}" has a time outside 00:00-23:59')
    return dt.time(h, m)


@lru_cache(maxsize=512)
def parse_sleep_windows(text: str) -> tuple[SleepWindow, ...]:
    """The sleep windows in a Daily Schedule text; ScheduleError names a malformed `Asleep:` line."""
    windows: list[SleepWindow] = []
    for line in (text or "").splitlines():
        match = _LINE.match(line)
        if not match or not _CLOCK.search(match.group("windows")):
            continue  # "Sleep: whenever the shop is quiet" is free text for the LLM
        for raw in match.group("windows").split(","):
            window = _WINDOW.match(raw)
            if not window:
                raise ScheduleError(
                    f'"{line.strip()}": "{raw.strip()}" is not a time range (e.g. Asleep: 22:30-07:15)'
                )
            start = _time(window.group(1), window.group(2), raw.strip())
            end = _time(window.group(3), window.group(4), raw.strip())
            if start == end:
                raise ScheduleError(f'"{line.strip()}": "{raw.strip()}" starts and ends at the same time')
            windows.append(SleepWindow(start, end))
    return tuple(windows)


def _zone(name: str) -> dt.tzinfo:
    """The agent's zone; an empty or unknown name falls back to the site's TIME_ZONE, then UTC."""
    for candidate in (name, settings.TIME_ZONE):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return dt.UTC


def asleep_until(*, schedule: str, timezone: str, when: dt.datetime) -> dt.datetime | None:
    """When the agent wakes if it is asleep at `when`, else None. Malformed schedules mean awake."""
    try:
        windows = parse_sleep_windows(schedule)
    except ScheduleError:
        return None
    if not windows:
        return None
    local = when.astimezone(_zone(timezone))
    wake: dt.datetime | None = None
    for window in windows:
        if not window.contains(local.time().replace(tzinfo=None)):
            continue
        end = local.replace(hour=window.end.hour, minute=window.end.minute, second=0, microsecond=0)
        if end <= local:
            end += dt.timedelta(days=1)
        wake = end if wake is None else max(wake, end)
    return wake.astimezone(dt.UTC) if wake else None
