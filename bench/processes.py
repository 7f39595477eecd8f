"""Process helpers shared by the benches.

A module of its own, apart from `bench_engine.py`: `bench_scale.py --against REF` imports the tree
helpers (agents, messages) from the measured checkout's `bench/`, and what that checkout lacks, such as
this module, from its own folder, so an older checkout is stopped the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path


def stop_process(process: subprocess.Popen) -> None:
    """Stop a process started in its own group: SIGTERM, then SIGKILL to the group after 60 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def checkout(repository: Path, ref: str, path: Path) -> Iterator[Path]:
    """A detached git worktree of `ref` at `path` (a bench's `--against REF`), removed on leaving.

    Imported inside a bench's `main()`, never at module level: a bench run on an older checkout takes
    this module from that checkout's `bench/` when it has one, which may not have this function."""
    subprocess.run(
        ["git", "-C", str(repository), "worktree", "add", "--detach", str(path), ref],
        check=True,
        capture_output=True,
    )
    try:
        yield path
    finally:
        subprocess.run(
            ["git", "-C", str(repository), "worktree", "remove", "--force", str(path)], capture_output=True
        )
