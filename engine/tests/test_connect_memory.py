"""After a burst of connections the connect step settles the heap (engine/heap.py): the garbage collected,
the survivors frozen out of later collections (runagents only), the freed pages handed back."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

import pytest

from engine import heap
from engine.connect_steps import ConnectStep
from engine.gateway_context import GatewayContext
from engine.heap import COLLECT_SECONDS, THAW_MIN, THAW_SECONDS, Heap, return_freed_memory

glibc = pytest.mark.skipif(heap.MALLOC_TRIM is None, reason="needs glibc's malloc_trim")


class Cycle:
    """An object in a reference cycle: only a collection frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def thawed():
    """The test process's heap unfrozen before and after, and no heap's hook left: a freeze must not
    outlive its test."""
    gc.unfreeze()
    yield
    for callback in [c for c in gc.callbacks if isinstance(getattr(c, "__self__", None), Heap)]:
        callback.__self__.release()
    gc.unfreeze()


def _rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def _context(**kwargs) -> GatewayContext:
    return GatewayContext(
        gateway_id="gw-memory:1",
        names=[],
        transport_factory=lambda agent, **_: None,
        enqueue=lambda node_id, token: None,
        tick_seconds=1.0,
        idle_pass_seconds=1.0,
        **kwargs,
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


def test_settling_collects_the_garbage_and_freezes_the_survivors(thawed):
    garbage, kept = Cycle(), Cycle()
    gone = weakref.ref(garbage)
    del garbage
    settling = Heap(freeze=True)
    settling.settle(held=1)
    assert gone() is None
    assert gc.get_freeze_count() > 0
    assert kept.me is kept


def test_a_frozen_cycle_dropped_stays_until_enough_clients_were_dropped(thawed):
    settling = Heap(freeze=True)
    client = Cycle()  # a client's sender and the client refer to each other
    gone = weakref.ref(client)
    settling.settle(held=20)  # frozen with the first burst
    del client
    for _ in range(THAW_MIN):
        settling.client_dropped()
    assert settling.due(held=20) is False
    settling.settle(held=20)  # THAW_MIN dropped of 20 held: not past the share, stays frozen
    gc.collect()
    assert gone() is not None
    settling.client_dropped()
    assert settling.due(held=20) is True  # a pass with nothing to connect settles it then
    settling.settle(held=20)  # one more: thawed, collected whole, frozen again
    assert gone() is None
    assert settling.dropped == 0
    assert gc.get_freeze_count() > 0


def test_the_survivors_of_each_later_full_collection_are_frozen_too(thawed):
    settling = Heap(freeze=True)
    settling.settle(held=1)
    frozen = gc.get_freeze_count()
    kept = [Cycle() for _ in range(100)]  # what the agents' traffic leaves after the burst
    gc.collect()
    assert gc.get_freeze_count() >= frozen + len(kept)
    gc.collect(1)  # a younger collection freezes nothing
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_a_frozen_heap_is_collected_every_few_seconds_and_its_survivors_frozen(thawed, clock):
    settling = Heap(freeze=True)
    assert settling.tend() is False  # nothing frozen yet: Python's own collections as usual
    settling.settle(held=1)
    assert settling.tend() is True
    kept = [Cycle() for _ in range(100)]
    garbage = Cycle()
    gone = weakref.ref(garbage)
    del garbage
    frozen = gc.get_freeze_count()
    clock.advance(COLLECT_SECONDS - 1)
    assert settling.tend() is False
    clock.advance(1)
    assert settling.tend() is True
    assert gone() is None
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_the_whole_heap_is_collected_again_each_hour(thawed, clock):
    settling = Heap(freeze=True)
    client = Cycle()
    gone = weakref.ref(client)
    settling.settle(held=20)
    del client
    clock.advance(THAW_SECONDS - 1)
    assert settling.due(held=20) is False
    clock.advance(1)
    assert settling.due(held=20) is True
    settling.settle(held=20)
    assert gone() is None
    assert settling.due(held=20) is False


def test_a_gateway_outside_runagents_freezes_nothing(thawed):
    kept = Cycle()
    assert Heap().settle(held=5) is (heap.MALLOC_TRIM is not None)  # the pages are returned all the same
    assert gc.get_freeze_count() == 0
    assert kept.me is kept


def test_the_first_pass_after_a_burst_settles_the_gateway_s_heap(thawed):
    async def passes():
        step = ConnectStep(_context(heap=Heap(freeze=True)))
        step.connected_since_trim = 2
        await step.run()
        await step._trim
        assert gc.get_freeze_count() > 0

    asyncio.run(passes())
