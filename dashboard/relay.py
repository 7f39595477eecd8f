"""The relay: carries what other processes wrote to the database to this process's sockets.

Gateways and workers write `ActivityEvent` and `SandboxUpdate` rows; they never talk to the web
process. One relay per web process tails both tables by id (a short poll, `dashboard.tail.IdTail`:
ids that commit out of order are still read, once) and `group_send`s what is new to the groups its
own consumers joined. It works the same on the in-memory channel layer and on
Redis; the groups are named per process so that two web processes sharing Redis never deliver an
event twice. It starts with the first socket and stops with the last one.

Steps of one `step()`:
1. read events after the cursor and send each to the dashboard group;
2. send fresh snapshots of what those events touched (a conversation's graph, LLM usage, agents);
3. read sandbox updates after their cursor and send the changed messages and typing to each chat's group;
4. every few seconds, send the agents' table again (leases expire without writing an event) and a
   `relay.recheck` tick, on which idle sockets re-check their session and OTP device.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from conversations.models import ActivityEvent
from dashboard import selectors
from dashboard.tail import START_WINDOW, IdTail
from sandbox.models import SandboxUpdate

log = logging.getLogger(__name__)

POLL_SECONDS = 0.25
AGENTS_REFRESH_SECONDS = 5.0
RECHECK_TICK_SECONDS = 5.0
MAX_BACKOFF_SECONDS = 10.0

#: Event kinds after which a conversation's task graph looks different.
GRAPH_KINDS = frozenset(
    {
        ActivityEvent.Kind.TRIGGER,
        ActivityEvent.Kind.REPLAN,
        ActivityEvent.Kind.NODE_CLAIMED,
        ActivityEvent.Kind.NODE_DONE,
        ActivityEvent.Kind.NODE_FAILED,
        ActivityEvent.Kind.NODE_RETRIED,
        ActivityEvent.Kind.NODE_DEFERRED,
        ActivityEvent.Kind.GRAPH_DELETED,
        ActivityEvent.Kind.MESSAGE_IN,
        ActivityEvent.Kind.MESSAGE_OUT,
    }
)
AGENT_KINDS = frozenset(
    {ActivityEvent.Kind.AGENT_ONLINE, ActivityEvent.Kind.AGENT_OFFLINE, ActivityEvent.Kind.AGENT_ERROR}
)

PROCESS_GROUP = f"dashboard.{uuid.uuid4().hex[:12]}"


def dashboard_group() -> str:
    return PROCESS_GROUP


def sandbox_group(chat_id: int) -> str:
    return f"{PROCESS_GROUP}.sandbox.{int(chat_id)}"


class Relay:
    def __init__(self, *, poll_seconds: float = POLL_SECONDS) -> None:
        self.poll_seconds = poll_seconds
        self.layer = get_channel_layer()
        self.events: IdTail | None = None
        self.updates: IdTail | None = None
        self.subscribers = 0
        self.task: asyncio.Task[None] | None = None
        self._agents_sent: list[dict[str, Any]] | None = None
        self._agents_due = 0.0
        self._recheck_due = 0.0
        #: Set once the cursors are at the tables' ends (`start_cursors`).
        self.started = asyncio.Event()

    async def start_cursors(self) -> None:
        """Start at the tables' ends: sockets get what came before from their own hello. Ids
        missing just below the end may still be committing; they are watched as holes."""

        def tails() -> tuple[IdTail, IdTail]:
            last_event = selectors.last_event_id()
            last_update = selectors.last_sandbox_update_id()
            return (
                IdTail(
                    cursor=last_event,
                    present=selectors.recent_event_ids(below_or_at=last_event, window=START_WINDOW),
                ),
                IdTail(
                    cursor=last_update,
                    present=selectors.recent_sandbox_update_ids(below_or_at=last_update, window=START_WINDOW),
                ),
            )

        self.events, self.updates = await database_sync_to_async(tails)()
        self._agents_sent = await database_sync_to_async(selectors.agent_rows)()
        now = asyncio.get_running_loop().time()
        self._agents_due = now + AGENTS_REFRESH_SECONDS
        self._recheck_due = now + RECHECK_TICK_SECONDS
        self.started.set()

    async def step(self) -> bool:
        """Relay everything new once; return whether there was anything."""
        if self.events is None or self.updates is None:
            await self.start_cursors()
        did_events = await self._relay_events()
        did_updates = await self._relay_sandbox_updates()
        await self._refresh_agents()
        await self._tick_recheck()
        return did_events or did_updates

    async def _relay_events(self) -> bool:
        tail = self.events
        found = await database_sync_to_async(selectors.events_tail)(
            after_id=tail.cursor, hole_ids=tail.hole_ids()
        )
        new_ids = set(tail.accept(e["id"] for e in found))
        events = [e for e in found if e["id"] in new_ids]
        if not events:
            return False
        conversations: list[int] = []
        usage = agents = False
        for event in events:
            await self.layer.group_send(dashboard_group(), {"type": "relay.event", "event": event})
            if event["kind"] in GRAPH_KINDS and event["conversation_id"]:
                if event["conversation_id"] not in conversations:
                    conversations.append(event["conversation_id"])
            usage |= event["kind"] == ActivityEvent.Kind.LLM_CALL
            agents |= event["kind"] in AGENT_KINDS
        for conversation_id in conversations:
            row = await database_sync_to_async(selectors.conversation_row)(conversation_id=conversation_id)
            if row is not None:
                await self.layer.group_send(
                    dashboard_group(), {"type": "relay.conversation", "conversation": row}
                )
        if usage:
            rows = await database_sync_to_async(selectors.llm_usage_today)()
            await self.layer.group_send(dashboard_group(), {"type": "relay.usage", "usage": rows})
        if agents:
            self._agents_due = 0.0
        return True

    async def _relay_sandbox_updates(self) -> bool:
        tail = self.updates
        found = await database_sync_to_async(selectors.sandbox_updates_tail)(
            after_id=tail.cursor, hole_ids=tail.hole_ids()
        )
        new_ids = set(tail.accept(u.pk for u in found))
        updates = [u for u in found if u.pk in new_ids]
        if not updates:
            return False
        touched: dict[int, set[int]] = {}
        typing_chats: set[int] = set()
        for update in updates:
            if update.kind == SandboxUpdate.Kind.TYPING:
                typing_chats.add(update.chat_id)
            elif update.message_id is not None:
                touched.setdefault(update.chat_id, set()).add(update.message_id)
                # A new message from someone ends their typing indicator: resend it.
                typing_chats.add(update.chat_id)
        for chat_id, message_ids in touched.items():
            for message_id in sorted(message_ids):
                row = await database_sync_to_async(selectors.sandbox_message)(
                    chat_id=chat_id, message_id=message_id
                )
                if row is not None:
                    await self.layer.group_send(
                        sandbox_group(chat_id), {"type": "relay.sandbox_message", "message": row}
                    )
        for chat_id in typing_chats:
            names = await database_sync_to_async(selectors.sandbox_typing)(chat_id=chat_id)
            await self.layer.group_send(
                sandbox_group(chat_id), {"type": "relay.sandbox_typing", "chat_id": chat_id, "typing": names}
            )
        return True

    async def _refresh_agents(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._agents_due:
            return
        self._agents_due = loop.time() + AGENTS_REFRESH_SECONDS
        rows = await database_sync_to_async(selectors.agent_rows)()
        if rows != self._agents_sent:
            self._agents_sent = rows
            await self.layer.group_send(dashboard_group(), {"type": "relay.agents", "agents": rows})

    async def _tick_recheck(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() < self._recheck_due:
            return
        self._recheck_due = loop.time() + RECHECK_TICK_SECONDS
        await self.layer.group_send(dashboard_group(), {"type": "relay.recheck"})

    async def run(self) -> None:
        failures = 0
        task = asyncio.current_task()
        while True:
            # A library on the way (the Redis channel layer's client, on Python 3.11) may swallow the
            # CancelledError of a stop request: the request still counts, and ends the loop here.
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            try:
                await self.step()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception:
                # A database hiccup must not end live updates: log it, back off a little, poll again.
                failures += 1
                log.exception("dashboard relay: polling the activity stream failed (%d in a row)", failures)
            await asyncio.sleep(min(self.poll_seconds * 2**failures, MAX_BACKOFF_SECONDS))

    def running_here(self) -> bool:
        if self.task is None or self.task.done():
            return False
        return self.task.get_loop() is asyncio.get_running_loop()


_relay: Relay | None = None


async def relay_subscribe() -> Relay:
    """Count one more socket and make sure this process's relay runs on the current loop; return
    once its cursors are set, so that what the socket's hello reads and what the relay sends meet.

    The relay and its task are made before the first await: sockets that connect at the same moment
    (two pages opened together, every page reconnecting after a restart) share one relay instead of
    each starting one, of which all but the last would poll on unseen, delivering everything twice
    and never stopping."""
    global _relay
    if _relay is None or not _relay.running_here():
        # Sockets of a loop that is gone (a restarted server, a finished test) no longer count.
        _relay = Relay()
        _relay.task = asyncio.get_running_loop().create_task(_relay.run(), name="dashboard-relay")
    relay = _relay
    relay.subscribers += 1
    await relay.started.wait()
    return relay


async def relay_unsubscribe() -> None:
    """Count one socket less; the last one stops the relay (the next socket starts a fresh one)."""
    global _relay
    if _relay is None:
        return
    _relay.subscribers = max(0, _relay.subscribers - 1)
    if _relay.subscribers == 0 and _relay.task is not None:
        _relay.task.cancel()
        _relay = None
