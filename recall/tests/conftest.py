"""The recall tests' cast: Wendy talking to Alice and Bob, with messages ingested as the gateway does."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from conversations.services.ingest import message_upsert
from conversations.transport.base import InboundMessage
from engine.tests.cast import make_agent

ALICE, BOB = 1001, 2002
START = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def wendy(db):
    return make_agent("Wendy")


@pytest.fixture
def say(wendy):
    """`say(peer, text, **fields)`: a message in Wendy's DM with `peer`, ingested through
    `message_upsert`; returns (conversation, message). Ids and dates count up per call."""
    numbers = itertools.count(1)

    def say(
        peer: int, text: str, *, agent=None, edited: bool = False, message_id: int | None = None, **fields
    ):
        number = message_id or next(numbers)
        record = InboundMessage(
            peer_id=peer,
            chat_kind=fields.pop("chat_kind", "dm"),
            message_id=number,
            date=START + dt.timedelta(minutes=number),
            sender_id=fields.pop("sender_id", peer),
            sender_name=fields.pop("sender_name", f"Peer {peer}"),
            text=text,
            **fields,
        )
        conversation, message, _ = message_upsert(agent=agent or wendy, record=record, edited=edited)
        return conversation, message

    return say
