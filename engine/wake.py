"""How an idle gateway waits: until a wake-up, the next due timer, the idle pass, or the stop signal.

After a pass that did nothing, `Gateway.run` calls `IdleWait.wait_for_work` (engine/idle_wait.py).
It waits for the earliest of:

- a **wake-up** from another process (a message in the sandbox, a plan stored by a worker, an operator's
  action: `conversations/services/wake.py`), on the installation's channel or counter row, or on the
  gateway's own (work for an agent it holds). `RedisWake` subscribes to the installation's channel and
  sets the gateway's `wakeup` event when a message comes; `DbWake` reads the `GatewayWake` counters (one
  primary-key read on a thread of its own) when a writer on this host woke its socket
  (`cindy_site/local_wake.py`), and every CINDY_WAKE_POLL_SECONDS (1 s) for writers on other hosts, and
  sets it when a counter moved since the last read;
- an **update** a Telegram client received (the transport calls `on_update`, which sets `wakeup`);
- the **next due timer**: the earliest future `not_before` of a pending node of a held agent (where the
  read delay, typing and retries end), a flood pause or a reconnect backoff ending, and the events and
  schedule refreshes `idle_seconds` already reports;
- the **idle pass** (CINDY_IDLE_PASS_SECONDS, 5 s, or the tick if that is longer), the upper bound:
  everything the gateway waits for wakes it sooner, so this pass is only the backstop for what nobody
  announces (another gateway's lease running out, node leases to reap, the watchdog, upkeep), and a
  lost wake-up costs at most one idle pass. An idle gateway with 100 agents thus runs a pass every few
  seconds instead of every second. While the listener is unhealthy (the poll fails, the Redis
  subscription is down) the tick is the bound again;
- the **stop** signal (`request_stop` sets `wakeup` too).

A wake-up carries its kind (`conversations/services/wake.py`). A **turn** wake-up (a person's message,
nodes planned or released, a Telegram client's update) ends the wait with "turn": the gateway runs the
steps of a turn only (`Gateway.follow_up_steps`: ingest, media, tick, presence). Any other wake-up,
and the timers, end it with "wakeup" or "timer": a full pass. Backstop steps still run at least once
an idle pass (`full_pass_seconds`): a turn wake-up that comes later than that after the last full
pass gets a full one, and the wait after a turn pass ends when the full pass is due.

With CINDY_WAKE off the gateway waits as it did before wake-ups existed: the tick, or an event or
schedule refresh due sooner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Protocol

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from cindy_site.local_wake import LocalWakeListener
from conversations.services.wake import WAKE_TURN, gateway_wake_channel, wake_channel, wake_counters

logger = logging.getLogger("engine.gateway")

#: Backoff bounds of the Redis subscription (the first also the database poll's pause) after a failure.
REDIS_RETRY_FIRST_SECONDS = 1.0
REDIS_RETRY_MAX_SECONDS = 30.0
#: How long one read of the Redis subscription waits; a quiet one sends a PING, answered by the next.
READ_SECONDS = 15.0


class Wakeup(asyncio.Event):
    """The gateway's wake-up event, which also knows its kind: `full` unless every reason it was set
    for since it was last cleared was a turn's (`set_turn`). A plain `set()` asks for a full pass."""

    def __init__(self) -> None:
        super().__init__()
        self.full = False

    def set(self) -> None:
        self.full = True
        super().set()

    def set_turn(self) -> None:
        """Work for a turn only (a message came, nodes were planned)."""
        super().set()

    def clear(self) -> None:
        self.full = False
        super().clear()


class WakeListener(Protocol):
    """Sets the gateway's `wakeup` event when another process made work for it."""

    async def start(self, event: Wakeup) -> None: ...

    async def stop(self) -> None: ...

    def healthy(self) -> bool:
        """Whether wake-ups can arrive now; while not, the gateway runs a pass every tick."""
        ...


class DbWake:
    """Reads the `GatewayWake` counters every `poll_seconds` on a thread (and database connection) of
    its own, and sets the event when one moved since the previous read: for a turn when only the
    turn wake-ups' did (`Wakeup.set_turn`), else for a full pass.

    The thread costs one primary-key read per poll and nothing on the event loop; `poll()` is one
    such read, which tests call directly instead of starting the thread (`threaded=False`).
    """

    def __init__(
        self, *, poll_seconds: float | None = None, threaded: bool = True, gateway_id: str = ""
    ) -> None:
        #: Given, the gateway's own counter row is read too (wake-ups for the agents it holds).
        self.gateway_id = gateway_id
        self.poll_seconds = poll_seconds if poll_seconds is not None else settings.CINDY_WAKE_POLL_SECONDS
        self.threaded = threaded
        self.seen: tuple[int, int] | None = None  # (full, turn) wake-ups counted
        self._notify: Callable[[bool], object] | None = None  # given whether a full pass is asked
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._listener: LocalWakeListener | None = None
        self.failing = False

    def healthy(self) -> bool:
        return not self.failing

    async def start(self, event: Wakeup) -> None:
        loop = asyncio.get_running_loop()
        self._notify = lambda full: loop.call_soon_threadsafe(event.set if full else event.set_turn)
        self.seen = await sync_to_async(wake_counters)(self.gateway_id)
        if self.threaded:
            self._thread = threading.Thread(target=self._run, name="wake poll", daemon=True)
            self._thread.start()

    def poll(self) -> bool:
        """Read the counters once; wake the gateway if one moved. Returns whether one did."""
        value = wake_counters(self.gateway_id)
        seen, self.seen = self.seen, value
        if seen is None or value == seen:
            return False
        if self._notify is not None:
            self._notify(value[0] != seen[0])
        return True

    def _run(self) -> None:
        # Writers on this host also send a datagram (cindy_site/local_wake.py): the thread sleeps on
        # it and reads the counter when woken, or every CINDY_WAKE_POLL_SECONDS for other hosts' writers.
        try:
            self._listener = LocalWakeListener(
                "gateway", name=f"{os.getpid()}-{threading.get_ident() % 10**6}"
            )
        except OSError as exc:
            logger.warning("no local wake-ups (the counter is read every %g s): %r", self.poll_seconds, exc)
        try:
            while True:
                if self._listener is not None:
                    self._listener.wait(self.poll_seconds)
                else:
                    self._stopped.wait(self.poll_seconds)
                if self._stopped.is_set():
                    break
                try:
                    self.poll()
                    self.failing = False
                except Exception as exc:  # a locked or lost database: the gateway passes every tick
                    if not self.failing:
                        logger.warning("wake-up poll failed (waking at each tick meanwhile): %r", exc)
                    self.failing = True
                    connection.close()
                    self._stopped.wait(REDIS_RETRY_FIRST_SECONDS)
        finally:
            if self._listener is not None:
                self._listener.close()
            connection.close()

    async def stop(self) -> None:
        self._stopped.set()
        if self._listener is not None:
            self._listener.interrupt()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 10)
            self._thread = None


class RedisWake:
    """Subscribes to the installation's wake channel; each message sets the gateway's `wakeup` event
    (for a turn if the message is `WAKE_TURN`).

    A lost connection is logged and retried with backoff (1 s doubling to 30 s); meanwhile the gateway
    wakes at each tick. Every (re)subscription also sets the event once, for what it may have missed.

    The subscription is read `read_seconds` at a time, never with redis-py's blocking `listen()`:
    once the socket has failed with ETIMEDOUT (a link that stayed down), redis-py 8 answers every
    read of that connection at once with "no message" (Python's TimeoutError is both the socket's
    error and the read timeout it maps to None), and `listen()` loops on that without ever
    yielding, which froze the gateway's whole event loop. Here a read that comes back empty before
    its time, or a quiet window whose PING gets no answer by the end of the next one (a link that
    drops everything silently), ends the subscription as lost.
    """

    def __init__(self, url: str, *, gateway_id: str = "", read_seconds: float = READ_SECONDS) -> None:
        self.url = url
        self.read_seconds = read_seconds
        #: Given, the gateway's own channel is subscribed too (wake-ups for the agents it holds).
        self.gateway_id = gateway_id
        self.channel = ""
        self.channels: list[str] = []
        self.subscribed = asyncio.Event()
        self._task: asyncio.Task | None = None

    def healthy(self) -> bool:
        return self.subscribed.is_set()

    async def start(self, event: Wakeup) -> None:
        self.channel = await sync_to_async(wake_channel)()
        self.channels = [self.channel]
        if self.gateway_id:
            self.channels.append(await sync_to_async(gateway_wake_channel)(self.gateway_id))
        self._task = asyncio.create_task(self._listen(event), name="wake subscription")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _listen(self, event: Wakeup) -> None:
        import redis.asyncio as aioredis

        backoff = REDIS_RETRY_FIRST_SECONDS
        while True:
            client = aioredis.Redis.from_url(self.url)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(*self.channels)
                    self.subscribed.set()
                    event.set()
                    backoff = REDIS_RETRY_FIRST_SECONDS
                    await self._read(pubsub, event)
            except Exception as exc:
                self.subscribed.clear()
                logger.warning(
                    "wake-up subscription to Redis failed (waking at each tick meanwhile; retry in %g s): %r",
                    backoff,
                    exc,
                )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, REDIS_RETRY_MAX_SECONDS)
            finally:
                await client.aclose()

    async def _read(self, pubsub, event: Wakeup) -> None:
        """Set `event` for each message until the subscription is lost (raises ConnectionError)."""
        loop = asyncio.get_running_loop()
        pinged = False
        while True:
            started = loop.time()
            message = await pubsub.get_message(timeout=self.read_seconds)
            if message is None:
                if loop.time() - started < self.read_seconds / 2:
                    raise ConnectionError(
                        "a read of the subscription returned at once with nothing: its socket failed"
                    )
                if pinged:
                    raise ConnectionError(f"no answer to a PING within {self.read_seconds:g} s")
                await pubsub.ping()
                pinged = True
                continue
            pinged = False
            if message.get("type") != "message":
                continue
            if message.get("data") == WAKE_TURN:
                event.set_turn()
            else:
                event.set()


def wake_listener(gateway_id: str = "") -> WakeListener | None:
    """The listener the settings ask for: None with CINDY_WAKE off. Given `gateway_id`, it also
    listens to that gateway's own channel or counter row."""
    if not settings.CINDY_WAKE:
        return None
    if settings.REDIS_URL:
        return RedisWake(settings.REDIS_URL, gateway_id=gateway_id)
    return DbWake(gateway_id=gateway_id)
