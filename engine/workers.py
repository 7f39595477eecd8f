"""The task workers as a supervised child of `runagents`, so one command runs everything.

The child is `manage.py runworkers` (engine/cluster.py) in its own process, told which gateway it
serves. On Linux it is asked to receive SIGKILL if the gateway dies (PR_SET_PDEATHSIG, engine/lifeline.py),
and each process of its pool the same when it dies, so a killed gateway leaves no worker behind. That
signal fires when the *thread* that started the child ends, so `start()` must run on the gateway's main
thread (the event loop's; see `WorkersStep.run`), never in a pool thread. It is restarted with
backoff if it exits, and stopped (SIGTERM, which kills its pool at once, then SIGKILL) when the gateway
exits.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

from django.conf import settings

from engine.lifeline import die_with_parent_hook

logger = logging.getLogger(__name__)

#: Set for the workers `runagents` supervises: the gateway whose planning tasks they run. (Defined
#: here, not in `runworkers`, so the gateway does not import django-q2's pool.)
GATEWAY_ENV = "CINDY_WORKERS_GATEWAY"

MAX_BACKOFF_SECONDS = 60
STOP_GRACE_SECONDS = 5


class WorkerProcess:
    def __init__(self, *, gateway_id: str = "") -> None:
        self.gateway_id = gateway_id
        self.process: subprocess.Popen | None = None
        self.failures = 0
        self.retry_at = 0.0

    def start(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            logger.warning(
                "task workers started outside the main thread: they stop when this thread ends, "
                "not when the gateway does"
            )
        command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "runworkers"]
        env = {**os.environ, GATEWAY_ENV: self.gateway_id}
        self.process = subprocess.Popen(command, env=env, preexec_fn=die_with_parent_hook())
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
