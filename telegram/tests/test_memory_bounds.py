"""The per-agent memory bounds of the Telegram transport (docs/performance.md, "Memory")."""

from __future__ import annotations

import pytest
from telethon import TelegramClient, utils
from telethon.tl import types

from agents.telethon_session import DatabaseSession
from telegram import client as telegram_client
from telegram.caches import LRUCache

from .conftest import GATEWAY, run
from .doubles import DATE, user


def test_lru_cache_drops_the_entry_used_longest_ago():
    cache: LRUCache[int, str] = LRUCache(2)
    cache[1], cache[2] = "one", "two"
    assert cache.get(1) == "one"  # read: now the most recent
    cache[3] = "three"
    assert (1 in cache, 2 in cache, 3 in cache, len(cache)) == (True, False, True, 2)
    assert cache.get(2, "gone") == "gone"


def test_lru_cache_refuses_a_size_below_one():
    with pytest.raises(ValueError, match="at least 1, not 0"):
        LRUCache(0)


def test_remembered_entities_are_bounded_and_keep_the_ones_in_use(transport):
    bound = telegram_client.ENTITY_NAMES
    first, second = user(100001), user(100002)
    transport._remember_entities([first, second])
    transport._remember_entities([user(200000 + i) for i in range(bound - 3)])
    assert transport._context().entities.get(utils.get_peer_id(first)) is first  # in use: kept
    transport._remember_entities([user(300001), user(300002)])
    entities = transport._context().entities
    assert len(entities) == bound
    assert entities.get(utils.get_peer_id(first)) is first
    assert entities.get(utils.get_peer_id(second)) is None  # the one used longest ago went first
    assert entities.get(300002) is not None


def test_a_dropped_sender_is_named_again_by_the_update_that_carries_it(transport, fake_client):
    transport._remember_entities([user(400000 + i) for i in range(telegram_client.ENTITY_NAMES)])
    assert transport._context().entities.get(501) is None
    update = types.UpdateNewMessage(
        message=types.Message(id=9, peer_id=types.PeerUser(501), date=DATE, message="hi"), pts=1, pts_count=1
    )
    update._entities = {501: user(501)}
    run(fake_client.dispatch, update)
    (new,) = run(transport.poll_updates)
    assert new.message.sender_name == "Ann"


def test_telethon_keeps_a_bounded_entity_cache(logged_in, settings):
    session = DatabaseSession(logged_in, gateway_id=GATEWAY)
    client = telegram_client.default_client_factory(
        session, settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH
    )
    assert isinstance(client, TelegramClient)
    assert client._entity_cache_limit == telegram_client.TELETHON_ENTITY_CACHE_LIMIT < 5000
