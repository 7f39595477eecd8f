"""The gateway process's heap after a burst of connections: its garbage collected once, the survivors
frozen out of later collections, and the C heap's freed pages handed back to the system.

**Frozen survivors.** Python's full collection (its oldest generation) walks every tracked object and
holds the interpreter while it does, so no thread of the gateway runs meanwhile: not the event loop,
not the database thread. It comes whenever the objects promoted to the oldest generation since the last
one reach a quarter of those it holds, and its length grows with the agents held: one took 148 ms at
300 Telegram agents on a slow machine (bench/bench_thousand.py, which times every collection), and a
gateway pass that met one took as long. Almost every object it walks lives as long as the process or as
its agent's client: modules and classes (Telethon's TL types alone are a few thousand), and each client's
sender, connection, tasks and caches. `gc.freeze()` moves every object alive at that moment to a
permanent generation that collections skip, so the collections after it walk only what was made since.

**What a freeze keeps, and when it is undone.** A frozen object is still freed when its last reference
goes; what a freeze keeps is cyclic garbage among frozen objects, such as a client dropped after it was
frozen (its sender and the client refer to each other). So the gateway counts the clients it drops
(`GatewayContext.drop`); once more than THAW_SHARE of the clients held (and at least THAW_MIN) were
dropped since the heap was last thawed, or THAW_SECONDS passed, the next settling thaws it
(`gc.unfreeze()`), collects all of it once, and freezes it again: one full collection of the whole heap
per that much churn or per hour, instead of two a minute at 1,000 agents.

**Survivors of later collections.** What outlives the burst (the unread scans' caches, the chats' rows,
Telethon's objects of the agents' traffic) reaches the oldest generation too, and a full collection
walks it again each time: after the first freeze they took 74 and 96 ms at 1,000 agents on a slow
machine. So after each full collection its survivors are frozen too (a `gc.callbacks` hook), and the
next one walks only what was made since; and since Python waits for a quarter of the (frozen) heap's
size in promotions before it starts one, the gateway starts one itself every COLLECT_SECONDS
(`Heap.tend`, from the connect step), each walking a few seconds' worth.

**Freed pages.** Connecting clients makes a burst of short-lived objects (history pages, dialog lists,
query rows, Telethon's TL objects). Python frees them, but glibc keeps the freed pages of its heaps, so
the gateway's resident memory stays at the burst's peak; `malloc_trim(0)` returns them (docs/
performance.md, "Memory").

`Heap.settle` runs after each burst (engine/connect_steps.py, `ConnectStep`), off the event loop. Only
`manage.py runagents` freezes (`Gateway(freeze_heap=True)`): a gateway built inside a test process
must not freeze the test runner's objects.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

from cindy_site.clock import get_clock

logger = logging.getLogger("engine.gateway")

#: Clients dropped since the last thaw, as a share of those held, past which the next settling thaws.
THAW_SHARE = 0.1
#: ... and at least this many, so that a gateway of a few agents does not thaw at every reconnect.
THAW_MIN = 10
#: And at least this often, for what else the frozen objects left as cyclic garbage.
THAW_SECONDS = 3600.0
#: With the heap frozen, a full collection of what is not frozen at least this often (`Heap.tend`).
COLLECT_SECONDS = 10.0


def _malloc_trim():
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


MALLOC_TRIM = _malloc_trim()


def return_freed_memory() -> bool:
    """Hand the C heap's free pages back to the system; False where there is no `malloc_trim`. It
    walks the heaps under their locks: run it off the event loop."""
    if MALLOC_TRIM is None:
        return False
    MALLOC_TRIM(0)
    return True


class Heap:
    """The gateway's heap settling (see the module docstring): whether it freezes, the clients
    dropped since it last thawed, and when that was."""

    def __init__(self, *, freeze: bool = False) -> None:
        self.freeze = freeze
        #: Clients dropped since the last thaw (or the first freeze). Counted on the event loop; the
        #: settling (in a thread) subtracts what it saw, so a drop meanwhile is not lost.
        self.dropped = 0
        #: When the whole heap was last collected (monotonic, the process clock): the first freeze or
        #: the last thaw.
        self.thawed_at: float | None = None
        #: The last full collection `tend` made (monotonic).
        self.collected_at: float | None = None
        self._hooked = False

    def client_dropped(self) -> None:
        self.dropped += 1

    def due(self, held: int) -> bool:
        """Whether the heap is due a thaw without a burst of connections: enough clients of `held`
        dropped, or THAW_SECONDS since the whole heap was last collected."""
        return self.thawed_at is not None and self._thaw_due(held)

    def _thaw_due(self, held: int) -> bool:
        stale = self.thawed_at is not None and get_clock().monotonic() - self.thawed_at >= THAW_SECONDS
        return stale or self.dropped > max(THAW_MIN, held * THAW_SHARE)

    def settle(self, held: int) -> bool:
        """After a burst, or when `due`: collect the garbage (all of the heap, thawed, when a thaw is
        due; else what is not frozen) and freeze what survives, then return the freed pages. Returns
        whether the pages were returned (`return_freed_memory`)."""
        if self.freeze:
            dropped = self.dropped
            frozen = gc.get_freeze_count() > 0
            if frozen and self._thaw_due(held):
                gc.unfreeze()
                frozen = False
                logger.info("heap thawed for one full collection: %s clients dropped since the last", dropped)
            if not frozen:  # the whole heap is collected and frozen now: the counts start again
                self.dropped -= dropped
                self.thawed_at = get_clock().monotonic()
            gc.collect()
            gc.freeze()
            if not self._hooked:
                gc.callbacks.append(self._freeze_survivors)
                self._hooked = True
        return return_freed_memory()

    def tend(self) -> bool:
        """With the heap frozen, a full collection every COLLECT_SECONDS; returns whether it made one.

        Python starts a full collection when the objects promoted to the oldest generation since the
        last one reach a quarter of those it held then, frozen ones included: with 1,000 agents frozen
        that is hundreds of thousands of objects, walked in one pause (70 to 84 ms on a slow machine).
        Collected every few seconds instead, each walks what a few seconds promoted, and its
        survivors are frozen in turn (`_freeze_survivors`). On the event loop: a collection holds the
        interpreter whichever thread makes it."""
        if not self.freeze or self.thawed_at is None:
            return False
        at = get_clock().monotonic()
        if self.collected_at is not None and at - self.collected_at < COLLECT_SECONDS:
            return False
        self.collected_at = at
        gc.collect()
        return True

    def _freeze_survivors(self, phase: str, info: dict) -> None:
        """`gc.callbacks`: after each full collection, freeze its survivors too, so the next one walks
        only what was made since (the scans' caches, the chats' rows and Telethon's objects of the
        agents' traffic outlive the burst)."""
        if phase == "stop" and info.get("generation") == 2:
            gc.freeze()

    def release(self) -> None:
        """Stop freezing, and thaw: a test's heap must not outlive its test."""
        if self._hooked:
            gc.callbacks.remove(self._freeze_survivors)
            self._hooked = False
        gc.unfreeze()
