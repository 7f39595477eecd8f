"""Processes that die with their parent: Linux's parent-death signal (PR_SET_PDEATHSIG).

The gateway's task workers must never outlive it, or a killed gateway's workers keep planning beside
the next gateway's (and pay for a second LLM call of the same turn). Every process of the worker tree
asks for SIGKILL when its parent dies: SIGKILL has no handler, so a signal that arrives twice, or
while the process is busy, cannot deadlock it. The kernel sends the signal when the parent *thread*
that forked the child ends, so children are started from their parent's main thread.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent_hook(*, parent: int | None = None) -> Callable[[], None] | None:
    """A function to run in a new child (between fork and exec, or first thing after a fork) that asks
    for SIGKILL when `parent` (default: the calling process) dies; None where that is unsupported.

    libc is loaded here, in the parent: between fork and exec, loading a library could deadlock on a
    lock another thread held at fork time.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid() if parent is None else parent

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signal.SIGKILL)

    return hook
