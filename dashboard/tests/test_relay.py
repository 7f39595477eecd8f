"""The relay reads rows that commit out of id order (MariaDB), each exactly once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from cindy_site.clock import now
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from dashboard.relay import Relay, dashboard_group, relay_subscribe, relay_unsubscribe, sandbox_group
from dashboard.tail import HOLE_SECONDS, MAX_HOLES, IdTail
from sandbox.models import SandboxMessage, SandboxUpdate
from sandbox.services.chats import sandbox_chat_for, sandbox_say

RECEIVE_TIMEOUT = 5


@pytest.fixture
def in_memory_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


async def _next(layer, channel: str, kind: str) -> dict[str, Any]:
    """The next message of `kind` on `channel` (agents tables, rechecks and typing are skipped)."""
    while True:
        message = await asyncio.wait_for(layer.receive(channel), RECEIVE_TIMEOUT)
        if message["type"] == kind:
            return message
        assert message["type"] in ("relay.agents", "relay.recheck", "relay.sandbox_typing"), message


def _event_with_id(pk: int, summary: str) -> ActivityEvent:
    """An event row with a chosen id: what a transaction that took `pk` earlier makes visible now."""
    return ActivityEvent.objects.create(id=pk, kind="info", summary=summary, created=now())


@pytest.mark.django_db(transaction=True)
def test_an_event_committed_after_a_higher_id_is_relayed_once(clock, in_memory_layer):
    base = record_event("info", summary="before the relay started").pk

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(dashboard_group(), channel)
        relay = Relay()
        await relay.start_cursors()
        await database_sync_to_async(_event_with_id)(base + 2, "committed first")
        await relay.step()
        first = await _next(layer, channel, "relay.event")
        # The transaction holding base + 1 commits only now, below the relay's cursor.
        await database_sync_to_async(_event_with_id)(base + 1, "committed late")
        await relay.step()
        second = await _next(layer, channel, "relay.event")
        assert await relay.step() is False  # nothing new, nothing sent twice
        await database_sync_to_async(_event_with_id)(base + 3, "next")
        await relay.step()
        third = await _next(layer, channel, "relay.event")
        return [m["event"]["summary"] for m in (first, second, third)], relay

    summaries, relay = async_to_sync(scenario)()
    assert summaries == ["committed first", "committed late", "next"]
    # The filled hole is no longer waited for (ids of rows deleted by earlier tests may be).
    assert [hole for hole in relay.events.holes if hole > base] == []


@pytest.mark.django_db(transaction=True)
def test_an_event_still_committing_when_the_relay_starts_is_relayed(clock, in_memory_layer):
    first = record_event("info", summary="one").pk
    _event_with_id(first + 2, "three")

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(dashboard_group(), channel)
        relay = Relay()
        await relay.start_cursors()
        await database_sync_to_async(_event_with_id)(first + 1, "two, committed after the start")
        await relay.step()
        return await _next(layer, channel, "relay.event")

    assert async_to_sync(scenario)()["event"]["summary"] == "two, committed after the start"


@pytest.mark.django_db(transaction=True)
def test_a_sandbox_update_committed_out_of_order_is_relayed(clock, in_memory_layer, sandbox_agent):
    sandbox_say(agent=sandbox_agent, text="hello", as_name="Alice")
    chat = sandbox_chat_for(agent=sandbox_agent, as_name="Alice")
    base = SandboxUpdate.objects.latest("id").pk

    def say_with_update_id(pk: int, text: str) -> None:
        message = sandbox_say(agent=sandbox_agent, text=text, as_name="Alice")
        SandboxUpdate.objects.filter(chat=chat, message_id=message.message_id).update(id=pk)

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(sandbox_group(chat.pk), channel)
        relay = Relay()
        await relay.start_cursors()
        await database_sync_to_async(say_with_update_id)(base + 10, "committed first")
        await relay.step()
        first = await _next(layer, channel, "relay.sandbox_message")
        await database_sync_to_async(say_with_update_id)(base + 5, "committed late")
        await relay.step()
        second = await _next(layer, channel, "relay.sandbox_message")
        return first["message"]["text"], second["message"]["text"]

    assert async_to_sync(scenario)() == ("committed first", "committed late")
    assert SandboxMessage.objects.filter(chat=chat).count() == 3


def _relay_tasks() -> list[asyncio.Task]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "dashboard-relay" and not t.done()]


@pytest.mark.django_db(transaction=True)
def test_sockets_that_connect_together_share_one_relay_which_stops_with_the_last(clock, in_memory_layer):
    """Two pages opened (or reconnecting) at once: one relay polls for both, and none is left polling
    after both close (a second relay would deliver everything twice and outlive its sockets)."""

    async def scenario():
        first, second = await asyncio.gather(relay_subscribe(), relay_subscribe())
        running = _relay_tasks()
        await relay_unsubscribe()
        still = _relay_tasks()
        await relay_unsubscribe()
        await asyncio.sleep(0)  # let the cancelled task finish
        return first, second, running, still, _relay_tasks()

    first, second, running, still, left = async_to_sync(scenario)()
    assert first is second
    assert len(running) == 1
    assert still == running  # the other socket still has its relay
    assert left == []


# --- IdTail on its own ------------------------------------------------------------------------


def test_tail_returns_new_ids_in_order_and_never_twice(clock):
    tail = IdTail(cursor=10, present=range(1, 11))
    assert tail.accept([13, 11]) == [11, 13]
    assert tail.hole_ids() == [12]
    assert tail.accept([11, 12, 13]) == [12]
    assert tail.accept([12, 13]) == []
    assert tail.hole_ids() == []


def test_tail_forgets_a_hole_that_never_fills(clock):
    tail = IdTail(cursor=0)
    tail.accept([2])
    clock.advance(HOLE_SECONDS - 1)
    assert tail.hole_ids() == [1]
    clock.advance(1)
    assert tail.hole_ids() == []
    assert tail.accept([1]) == []  # far too late: below the cursor and no longer waited for


def test_tail_keeps_at_most_the_newest_holes(clock):
    tail = IdTail(cursor=0)
    tail.accept([MAX_HOLES * 3])
    holes = tail.hole_ids()
    assert len(holes) == MAX_HOLES
    assert holes[0] == MAX_HOLES * 2 and holes[-1] == MAX_HOLES * 3 - 1


def test_tail_starts_watching_ids_missing_just_below_its_start(clock):
    tail = IdTail(cursor=20, present=[17, 18, 20])
    assert tail.hole_ids()[-2:] == [16, 19]
    assert tail.accept([19]) == [19]
