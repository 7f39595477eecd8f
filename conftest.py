"""Fixtures shared by every app's tests: the injected clock and the cast."""

from __future__ import annotations

import pytest

from cindy_site.clock import FakeClock, set_clock

pytest_plugins = ["cindy_site.testing.fixtures", "cindy_site.testing.staff"]


@pytest.fixture
def clock():
    """A FakeClock installed as the process clock; move it with `clock.advance(seconds)`."""
    fake = FakeClock()
    previous = set_clock(fake)
    yield fake
    set_clock(previous)
