"""Process helpers shared by the benches.

A module of its own, apart from `bench_engine.py`: `bench_scale.py --against REF` imports the tree
helpers (agents, messages) from the measured checkout's `bench/`, and what that checkout lacks, such as
this module, from its own folder, so an older checkout is stopped the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess


def stop_process(process: subprocess.Popen) -> None:
    """Stop a process started in its own group: SIGTERM, then SIGKILL to the group after 60 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
