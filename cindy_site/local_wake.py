"""Wake-ups between the processes of one host, so that no idle process has to poll for them.

A listener (an idle gateway, an idle task pool's pusher) binds a Unix datagram socket in a directory
named after the installation's database and the kind of listener (`wake_dir`); a writer that made
work for that kind sends one byte to every socket there (`local_wake`). A socket whose process died is
removed by the next writer that finds nobody listening. A wake-up carries nothing and is only a hint:
the listener still looks for its work by itself, rarely, for what a writer on another host made.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import select
import socket
import tempfile
from pathlib import Path

from django.db import connection

logger = logging.getLogger(__name__)


def wake_dir(kind: str) -> Path:
    """The directory of this installation's `kind` sockets ("gateway", "task")."""
    name = str(connection.settings_dict["NAME"])
    digest = hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"cindy-wake-{os.getuid()}-{digest}-{kind}"


def local_wake(kind: str) -> int:
    """Wake every `kind` listener of this host now; returns how many sockets it reached. Never raises."""
    try:
        paths = list(wake_dir(kind).glob("*.sock"))
    except OSError:
        return 0
    if not paths:
        return 0
    reached = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        sender.setblocking(False)
        for path in paths:
            try:
                sender.sendto(b"1", str(path))
                reached += 1
            except BlockingIOError:  # its buffer is full of wake-ups already
                reached += 1
            except (ConnectionRefusedError, FileNotFoundError):  # a process that is gone
                with contextlib.suppress(OSError):
                    path.unlink()
            except OSError as exc:
                logger.warning("could not send a %s wake-up to %s: %r", kind, path, exc)
    return reached


class LocalWakeListener:
    """One process's socket: `wait` returns when a writer woke it, or after `timeout` seconds."""

    def __init__(self, kind: str, *, name: str = "") -> None:
        directory = wake_dir(kind)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.pid = os.getpid()
        self.path = directory / f"{name or self.pid}.sock"
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(str(self.path))
        self.socket.setblocking(False)

    def wait(self, timeout: float) -> bool:
        """Whether a wake-up came (all pending ones are consumed) before `timeout` seconds passed."""
        ready, _, _ = select.select([self.socket], [], [], timeout)
        woken = bool(ready)
        while True:
            try:
                self.socket.recv(64)
            except (BlockingIOError, InterruptedError):
                break
            woken = True
        return woken

    def interrupt(self) -> None:
        """End a `wait` in progress (from another thread)."""
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"1", str(self.path))

    def close(self) -> None:
        self.socket.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
