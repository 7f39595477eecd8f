"""Something costly made once per test run and shared by the run's xdist processes.

A migrated database costs about 20 s of CPU on SQLite and more on MariaDB; each test process used to
make its own, so a run on four processes paid for four. Here the first process to ask makes it,
under a lock that the others wait on, and the last to let go of it drops it. The processes find each
other through the run's base temporary directory (pytest-xdist's documented way to share a session
fixture: `tmp_path_factory.getbasetemp().parent`). Without xdist (one process, `-p no:xdist`) the
value is made and dropped as any session fixture's.

What is shared must be picklable (it is handed over as a file) and must not be written to by its
users: they copy it.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def once_per_run(
    tmp_path_factory, key: str, make: Callable[[Path], T], drop: Callable[[T], None]
) -> Iterator[T]:
    """`make(directory)`'s value, made by the first test process of the run that asks for `key` and
    shared with the others; `drop(value)` runs when the last process using it is done."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        value = make(tmp_path_factory.mktemp(key))
        try:
            yield value
        finally:
            drop(value)
        return
    root = tmp_path_factory.getbasetemp().parent / f"once-{key}"
    root.mkdir(exist_ok=True)
    with _locked(root):
        value = _take(root, make)
    try:
        yield value
    finally:
        with _locked(root):
            _let_go(root, drop)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    with open(root / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _take(root: Path, make: Callable[[Path], T]) -> T:
    users_file, value_file = root / "users", root / "value.pickle"
    if value_file.exists():
        value = pickle.loads(value_file.read_bytes())
        users = int(users_file.read_text())
    else:
        # A directory of its own each time: one made before may have been dropped with its files.
        value = make(Path(tempfile.mkdtemp(prefix="made-", dir=root)))
        value_file.write_bytes(pickle.dumps(value))
        users = 0
    users_file.write_text(str(users + 1))
    return value


def _let_go(root: Path, drop: Callable[[T], None]) -> None:
    users_file, value_file = root / "users", root / "value.pickle"
    users = int(users_file.read_text()) - 1
    if users > 0:
        users_file.write_text(str(users))
        return
    value = pickle.loads(value_file.read_bytes())
    value_file.unlink()
    users_file.unlink()
    drop(value)
