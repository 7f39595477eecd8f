"""The inbound path's plain-SQL reads give what the ORM gives, in one query each."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction

from cindy_site.rows import convert
from conversations.models import Conversation, Message, NodeStatus, TaskGraph, TaskNode
from conversations.selectors import (
    conversation_by_key,
    conversation_newest_message_id,
    graph_active_locked,
    message_by_key,
    message_reactions,
    message_recorded_before,
    message_window_rows,
    node_claimed,
    node_to_plan,
)
from conversations.services.graphs import graph_replan
from conversations.services.nodes import nodes_claim
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


@pytest.fixture
def chat():
    agent = make_agent()
    conversation = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Kim", topic_id=0)
    for number in (3, 5, 8):
        Message.objects.create(
            conversation=conversation,
            message_id=number,
            sender_id=77,
            date=AT + dt.timedelta(minutes=number),
            text=f"text {number}",
            deleted=number == 8,
            reactions=[{"emoji": "👍", "count": number}],
        )
    return conversation


def test_the_conversation_and_message_reads_give_the_orms_rows(chat, django_assert_num_queries):
    with django_assert_num_queries(1):
        found = conversation_by_key(agent_id=chat.agent_id, peer_id=77, topic_id=0)
    assert _values(found) == _values(Conversation.objects.get(pk=chat.pk))
    assert conversation_by_key(agent_id=chat.agent_id, peer_id=78, topic_id=0) is None
    with django_assert_num_queries(1):
        message = message_by_key(conversation_id=chat.pk, message_id=5)
    assert _values(message) == _values(Message.objects.get(conversation=chat, message_id=5))
    assert message_by_key(conversation_id=chat.pk, message_id=4) is None
    assert message_reactions(conversation_id=chat.pk, message_id=5) == [{"emoji": "👍", "count": 5}]
    assert message_reactions(conversation_id=chat.pk, message_id=4) is None


def test_an_earlier_message_of_any_kind_counts_as_recorded_before(chat):
    assert message_recorded_before(conversation_id=chat.pk, message_id=5)
    assert not message_recorded_before(conversation_id=chat.pk, message_id=3)
    assert conversation_newest_message_id(conversation_id=chat.pk) == 8  # a deleted one counts too
    assert conversation_newest_message_id(conversation_id=chat.pk + 1) is None


def test_the_history_window_reads_visible_messages_newest_first_from_a_start(chat):
    fields = ("id", "message_id", "date", "reactions", "deleted")
    rows = message_window_rows(conversation_id=chat.pk, since_message_id=None, count=5, fields=fields)
    assert [convert(Message, row, names=fields) for row in rows] == [
        list(r)
        for r in Message.objects.filter(conversation=chat, deleted=False)
        .order_by("-message_id")
        .values_list(*fields)
    ]
    assert [row[1] for row in rows] == [5, 3]
    hash(rows[0])  # driver rows key the rendering cache
    assert [
        r[1] for r in message_window_rows(conversation_id=chat.pk, since_message_id=4, count=5, fields=fields)
    ] == [5]
    assert [
        r[1]
        for r in message_window_rows(conversation_id=chat.pk, since_message_id=None, count=1, fields=fields)
    ] == [5]


def test_a_claimed_node_is_read_with_its_relations_in_one_query(chat, django_assert_num_queries):
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=5)
    node = TaskNode.objects.get(graph=graph)
    with django_assert_num_queries(1):
        assert node_claimed(node_id=node.pk, owner="gw#1") is None  # still pending
    [claimed] = nodes_claim(node_ids=[node.pk], owner="gw#1")
    assert claimed.status == NodeStatus.RUNNING and claimed.lease_owner == "gw#1"
    with django_assert_num_queries(1):
        found = node_claimed(node_id=node.pk, owner="gw#1")
        assert (found.conversation.pk, found.graph.pk, found.agent.name) == (
            chat.pk,
            graph.pk,
            chat.agent.name,
        )
    assert _values(found) == _values(TaskNode.objects.get(pk=node.pk))
    assert node_claimed(node_id=node.pk, owner="gw#2") is None
    with django_assert_num_queries(1):
        planned = node_to_plan(node_id=node.pk)
        assert planned.conversation.agent.name == planned.agent.name == chat.agent.name
        assert planned.graph.target_message_id == 5
    assert _values(planned.graph) == _values(TaskGraph.objects.get(pk=graph.pk))
    assert node_to_plan(node_id=node.pk + 100) is None


def test_the_active_graph_is_read_with_its_conversation(chat, django_assert_num_queries):
    assert graph_active_locked(conversation_id=chat.pk) is None
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=5)
    with transaction.atomic(), django_assert_num_queries(1):
        found = graph_active_locked(conversation_id=chat.pk)
        assert found.conversation.peer_id == 77
    assert _values(found) == _values(TaskGraph.objects.get(pk=graph.pk))
