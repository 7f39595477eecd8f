"""The reconciler on TelethonTransport: read marks, paging through a backlog, cheap reconnects, flood waits."""

from __future__ import annotations

import logging

import pytest
from telethon import errors
from telethon.tl import functions

from conversations.models import Message, TaskGraph
from conversations.transport.base import FloodWait
from engine import ingest
from engine.ingest import reconcile

from .conftest import run
from .doubles import ChatServer, user

ANN = 501
BOB = 502


@pytest.fixture
def server(fake_client):
    fake_client.server = ChatServer()
    return fake_client.server


def stored(peer_id: int) -> list[int]:
    return list(
        Message.objects.filter(conversation__peer_id=peer_id)
        .order_by("message_id")
        .values_list("message_id", flat=True)
    )


def targets(peer_id: int) -> list[int]:
    return list(
        TaskGraph.objects.filter(conversation__peer_id=peer_id).values_list("target_message_id", flat=True)
    )


def history_requests(fake_client) -> int:
    return len(fake_client.of_type(functions.messages.GetHistoryRequest))


def test_dialogs_report_the_read_mark_and_the_newest_message(transport, server):
    server.add_dm(user(ANN), range(1, 6), read_up_to=3)
    (details,) = run(transport.dialogs)
    marks = {k: v for k, v in details.extra.items() if k != "top_date"}
    assert marks == {
        "read_inbox_max_id": 3,
        "top_message": 5,
        "unread_count": 2,
        "unread_mark": False,
        "unread_mentions_count": 0,
        "unread_reactions_count": 0,
    }
    assert details.extra["top_date"] is not None


def test_a_first_start_answers_only_the_messages_after_the_read_mark(transport, server):
    server.add_dm(user(ANN), range(1, 6), read_up_to=3)
    server.add_dm(user(BOB, "Bob", "bob"), range(1, 4), read_up_to=3)
    run(reconcile, agent_id=transport.agent.pk, transport=transport)
    assert stored(ANN) == [1, 2, 3, 4, 5] and stored(BOB) == [1, 2, 3]
    assert targets(ANN) == [5]
    assert targets(BOB) == []


def test_a_backlog_larger_than_a_page_is_read_to_the_end(transport, server, fake_client, monkeypatch):
    monkeypatch.setattr(ingest, "RECONCILE_LIMIT", 5)
    server.add_dm(user(ANN), range(1, 4), read_up_to=3)
    run(reconcile, agent_id=transport.agent.pk, transport=transport)
    server.add_dm(user(ANN), range(1, 16), read_up_to=3)  # twelve messages while the gateway was away
    before = history_requests(fake_client)
    fetched = run(reconcile, agent_id=transport.agent.pk, transport=transport)
    assert fetched == 12
    assert stored(ANN) == list(range(1, 16))
    pages = fake_client.of_type(functions.messages.GetHistoryRequest)[before:]
    assert [p.min_id for p in pages] == [3, 8, 13]  # the third page is short: the end
    assert targets(ANN) == [15]  # one replan for the whole backlog


def test_a_reconnect_with_nothing_new_reads_no_history(transport, server, fake_client):
    server.add_dm(user(ANN), range(1, 4), read_up_to=3)
    run(reconcile, agent_id=transport.agent.pk, transport=transport)
    before = history_requests(fake_client)
    assert run(reconcile, agent_id=transport.agent.pk, transport=transport) == 0
    assert history_requests(fake_client) == before


def test_a_flood_wait_while_paging_propagates_and_keeps_the_pages_read(
    transport, server, fake_client, clock, monkeypatch
):
    monkeypatch.setattr(ingest, "RECONCILE_LIMIT", 5)
    server.add_dm(user(ANN), range(1, 4), read_up_to=3)
    run(reconcile, agent_id=transport.agent.pk, transport=transport)
    server.add_dm(user(ANN), range(1, 16), read_up_to=3)
    server.fail_history[server.history_requests + 2] = errors.FloodWaitError(request=None, capture=30)
    with pytest.raises(FloodWait) as exc:
        run(reconcile, agent_id=transport.agent.pk, transport=transport)
    assert exc.value.seconds == 30
    assert stored(ANN) == list(range(1, 9))  # the first page is kept
    requests = len(fake_client.requests)
    with pytest.raises(FloodWait):  # the gateway's next attempt makes no request before the time is up
        run(reconcile, agent_id=transport.agent.pk, transport=transport)
    assert len(fake_client.requests) == requests
    clock.advance(30)
    run(reconcile, agent_id=transport.agent.pk, transport=transport)
    assert stored(ANN) == list(range(1, 16))


def test_a_huge_backlog_stops_paging_at_the_bound_and_reads_the_newest_page(
    transport, server, fake_client, monkeypatch, caplog
):
    monkeypatch.setattr(ingest, "RECONCILE_LIMIT", 5)
    monkeypatch.setattr(ingest, "RECONCILE_MAX_PAGES", 2)
    server.add_dm(user(ANN), range(1, 4), read_up_to=3)
    run(reconcile, agent_id=transport.agent.pk, transport=transport)
    server.add_dm(user(ANN), range(1, 31), read_up_to=3)
    with caplog.at_level(logging.WARNING, logger="engine.ingest"):
        run(reconcile, agent_id=transport.agent.pk, transport=transport)
    assert stored(ANN) == [*range(1, 14), *range(26, 31)]
    assert "messages after #13 and before #26 were not fetched" in caplog.text
    assert targets(ANN) == [30]
