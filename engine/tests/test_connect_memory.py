"""After a burst of connections the connect step hands the heap's freed pages back (engine/connect_steps.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import connect_steps
from engine.connect_steps import ConnectStep, return_freed_memory
from engine.gateway_context import GatewayContext

glibc = pytest.mark.skipif(connect_steps.MALLOC_TRIM is None, reason="needs glibc's malloc_trim")


def _rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def _context() -> GatewayContext:
    return GatewayContext(
        gateway_id="gw-memory:1",
        names=[],
        transport_factory=lambda agent, **_: None,
        enqueue=lambda node_id, token: None,
        tick_seconds=1.0,
        idle_pass_seconds=1.0,
    )


@glibc
def test_freed_heap_pages_go_back_to_the_system():
    # 64 MiB of 4 KiB buffers (glibc's heap, not Python's arenas); every 64th stays, so the freed
    # ones are holes inside the heap that free() alone does not return.
    buffers = [bytearray(4096) for _ in range(16384)]
    kept = buffers[::64]
    del buffers
    held = _rss_kib()
    assert return_freed_memory() is True
    assert held - _rss_kib() > 32 * 1024
    assert len(kept) == 256


@glibc
def test_the_first_pass_with_nothing_to_connect_after_a_burst_trims_once():
    async def passes():
        step = ConnectStep(_context())
        assert await step.run() is False
        assert step._trim is None  # nothing was connected: nothing to trim
        step.connected_since_trim = 3  # what connecting three clients counts
        await step.run()
        trim = step._trim
        assert trim is not None and step.connected_since_trim == 0
        assert await trim is True
        await step.run()
        assert step._trim is trim  # no new burst: no second trim

    asyncio.run(passes())
