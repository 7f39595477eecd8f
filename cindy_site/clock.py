"""The injected clock.

Waits, retries, leases, schedules and OTP expiry all read time through `clock.now()` so that tests can
move time forward instead of sleeping. Production code calls `get_clock()`; tests install a
`FakeClock` with `set_clock()` (see the `clock` fixture in `conftest.py`).
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime: ...

    def monotonic(self) -> float: ...


class SystemClock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def monotonic(self) -> float:
        import time

        return time.monotonic()


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)
        if self._now.tzinfo is None:
            raise ValueError("FakeClock needs a timezone-aware start time")
        self._mono = 1000.0
        self._lock = threading.Lock()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float = 0, **kwargs: float) -> dt.datetime:
        delta = dt.timedelta(seconds=seconds, **kwargs)
        with self._lock:
            self._now += delta
            self._mono += delta.total_seconds()
            return self._now

    def set(self, when: dt.datetime) -> None:
        with self._lock:
            self._mono += (when - self._now).total_seconds()
            self._now = when


_clock: Clock = SystemClock()


def get_clock() -> Clock:
    return _clock


def set_clock(clock: Clock) -> Clock:
    """Install `clock` and return the previous one."""
    global _clock
    previous, _clock = _clock, clock
    return previous


def now() -> dt.datetime:
    return _clock.now()
