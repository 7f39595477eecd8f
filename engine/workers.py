"""The django-q2 cluster as a supervised child of `runagents`, so one command runs everything.

The child is `manage.py qcluster` in its own process. On Linux it is asked to receive SIGTERM if the
gateway dies (PR_SET_PDEATHSIG), so a killed gateway does not leave workers behind. That signal fires
when the *thread* that started the child ends, so `start()` must run on the gateway's main thread (the
event loop's; see `Gateway.step_workers`), never in a pool thread. It is restarted with backoff if it
exits, and stopped (SIGTERM, then SIGKILL) when the gateway exits.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from django.conf import settings

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 60
STOP_GRACE_SECONDS = 5


PR_SET_PDEATHSIG = 1


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A `preexec_fn` asking for SIGTERM when the parent dies, or None where that is unsupported.

    libc is loaded here, in the parent: the hook runs between fork and exec, where loading a library
    could deadlock on a lock another thread of the gateway held at fork time.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the gateway died before the signal was armed
            os.kill(os.getpid(), signal.SIGTERM)

    return hook


class WorkerProcess:
    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.failures = 0
        self.retry_at = 0.0

    def start(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            logger.warning(
                "task workers started outside the main thread: they stop when this thread ends, "
                "not when the gateway does"
            )
        command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "qcluster"]
        self.process = subprocess.Popen(command, env=os.environ.copy(), preexec_fn=_die_with_parent_hook())
        logger.info("started task workers (pid %s)", self.process.pid)

    def step(self) -> bool:
        """Start or restart the cluster when needed; returns whether it did."""
        if self.process is not None and self.process.poll() is None:
            return False
        if self.process is not None:
            self.failures += 1
            delay = min(2**self.failures, MAX_BACKOFF_SECONDS)
            logger.warning(
                "task workers exited with status %s; restarting in %ss", self.process.returncode, delay
            )
            self.retry_at = time.monotonic() + delay
            self.process = None
        if time.monotonic() < self.retry_at:
            return False
        self.start()
        return True

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        logger.info("task workers stopped")
