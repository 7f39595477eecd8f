"""`update_by_pk`: many rows, each its own value, in one statement per batch."""

from __future__ import annotations

import pytest

from cindy_site import bulk
from conversations.models import Conversation
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db


def test_each_row_gets_its_own_value_across_batches_and_other_rows_stay(
    monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(bulk, "BATCH", 2)
    agent = make_agent()
    chats = [Conversation.objects.create(agent=agent, peer_id=100 + i, kind="dm") for i in range(6)]
    values = {c.pk: 10 * i for i, c in enumerate(chats[:5])}
    values[chats[1].pk] = None

    with django_assert_num_queries(3):
        changed = bulk.update_by_pk(Conversation, "last_read_message_id", values)

    assert changed == 5
    stored = dict(Conversation.objects.values_list("pk", "last_read_message_id"))
    assert stored == {**values, chats[5].pk: None}
    assert bulk.update_by_pk(Conversation, "last_read_message_id", {}) == 0
