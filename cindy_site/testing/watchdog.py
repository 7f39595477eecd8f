"""Loaded with `-p`: a deadline for each test, so that a hang fails the run instead of stalling it.

A test whose setup, call and teardown together run longer than `CINDY_TEST_TIMEOUT` seconds (default
300; the slowest test takes well under a minute on an idle 2-core machine) gets its id printed,
then every thread's stack (`faulthandler`), and the run ends with exit status 1. `0` turns the
deadline off, e.g. to sit in a debugger.
"""

from __future__ import annotations

import faulthandler
import os
import threading

import pytest

DEFAULT_SECONDS = 300.0


def _limit() -> float:
    raw = os.environ.get("CINDY_TEST_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise pytest.UsageError(
            f"CINDY_TEST_TIMEOUT is {raw!r}: give the seconds one test may take, e.g. 300 (0 turns it off)"
        ) from None
    if seconds < 0:
        raise pytest.UsageError(f"CINDY_TEST_TIMEOUT is {raw!r}: it cannot be negative (0 turns it off)")
    return seconds


LIMIT = 0.0
_stream = None


def pytest_configure(config: pytest.Config) -> None:
    global LIMIT, _stream
    LIMIT = _limit()
    if LIMIT and _stream is None:
        # The real stderr (pytest captures fd 2 only around each test): the dump reaches the terminal.
        _stream = os.fdopen(os.dup(2), "w", buffering=1)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if not LIMIT:
        yield
        return

    def announce() -> None:
        _stream.write(f"\n{item.nodeid} has run for {LIMIT:g} s (CINDY_TEST_TIMEOUT): stacks follow\n")

    timer = threading.Timer(LIMIT, announce)
    timer.daemon = True
    timer.start()
    # One second later, so the line above comes first; exits the process with status 1.
    faulthandler.dump_traceback_later(LIMIT + 1, exit=True, file=_stream)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        timer.cancel()
