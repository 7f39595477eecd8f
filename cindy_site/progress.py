"""When the long commands (`recall_index`, `importchat`, `backfill`) print their next progress line:
at most one every PROGRESS_SECONDS, so a log shows the work going on without a line per batch."""

from __future__ import annotations

import time
from collections.abc import Callable

#: Seconds between two progress lines.
PROGRESS_SECONDS = 3.0


class ProgressPace:
    """Says when a progress line is due: PROGRESS_SECONDS after the last one (or after the start), on
    the clock given (`time.monotonic`, or the injected clock's)."""

    def __init__(self, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self.shown = monotonic()

    def due(self) -> bool:
        """Whether a line is due now; when it is, the next one is counted from now."""
        at = self.monotonic()
        if at - self.shown < PROGRESS_SECONDS:
            return False
        self.shown = at
        return True
