"""The tick: eligibility, compare-and-set claims, fairness, and the lease reaper."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Conversation, NodeStatus, TaskGraph, TaskNode
from conversations.selectors import eligible_nodes
from conversations.services.graphs import graph_append_chain, graph_replan
from conversations.services.nodes import node_claim, nodes_reap_expired
from engine.tests.harness import Harness
from engine.tick import Ticker
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_person, sandbox_user_for_agent

pytestmark = pytest.mark.django_db


def conversation_with(agent, name: str) -> Conversation:
    person = sandbox_person(name=name)
    sandbox_user_for_agent(agent=agent)
    return Conversation.objects.create(agent=agent, peer_id=person.user_id, kind="dm", title=name)


def queue_sends(conversation: Conversation, count: int) -> list[TaskNode]:
    """A planned graph: a done `received` node followed by `count` chained sends."""
    graph = graph_replan(conversation=conversation, trigger="message", target_message_id=None)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE)
    return graph_append_chain(
        after=received, tasks=[("send", {"text": f"{conversation.title} {i}"}) for i in range(count)]
    )


def test_a_chat_with_fifty_queued_sends_does_not_starve_another_chat(agent, clock):
    busy, quiet = conversation_with(agent, "Busy"), conversation_with(agent, "Quiet")
    queue_sends(busy, 50)
    queue_sends(quiet, 1)
    harness = Harness(clock)
    harness.start()
    harness.settle(max_rounds=1000)
    order = list(
        SandboxMessage.objects.filter(sender__agent=agent)
        .order_by("date", "id")
        .values_list("text", flat=True)
    )
    assert len(order) == 51
    assert order.index("Quiet 0") <= 1


def test_agents_take_turns_when_both_have_backlogs(agent, other_agent, clock):
    queue_sends(conversation_with(agent, "A"), 5)
    queue_sends(conversation_with(other_agent, "B"), 5)
    ticker = Ticker(gateway_id="gw")
    picked = ticker.claim(agent_ids=[agent.pk, other_agent.pk])
    assert sorted(node.agent_id for node, _ in picked) == sorted([agent.pk, other_agent.pk])


def test_an_asleep_agents_nodes_wait_and_sleep_is_asked_only_of_agents_with_a_node_to_start(
    agent, other_agent, clock
):
    queue_sends(conversation_with(agent, "A"), 2)
    asked: list[set[int]] = []

    def asleep(agent_ids: set[int]) -> set[int]:
        asked.append(set(agent_ids))
        return {agent.pk} & agent_ids

    ticker = Ticker(gateway_id="gw")
    assert ticker.claim(agent_ids=[agent.pk, other_agent.pk], asleep=asleep) == []
    assert asked == [{agent.pk}]  # never about the agent with nothing to start

    queue_sends(conversation_with(other_agent, "B"), 1)
    asked.clear()
    picked = ticker.claim(agent_ids=[agent.pk, other_agent.pk], asleep=asleep)
    assert [node.agent_id for node, _ in picked] == [other_agent.pk]  # read again without the sleeper
    assert asked == [{agent.pk, other_agent.pk}]


def test_at_most_one_node_runs_per_conversation(agent, clock):
    conversation = conversation_with(agent, "A")
    _first, second = queue_sends(conversation, 2)
    second.depends_on.clear()  # both are eligible on their own
    ticker = Ticker(gateway_id="gw")
    assert len(ticker.claim(agent_ids=[agent.pk])) == 1
    assert ticker.claim(agent_ids=[agent.pk]) == []


def test_a_node_is_claimed_only_once(agent, clock):
    (node,) = queue_sends(conversation_with(agent, "A"), 1)
    assert node_claim(node_id=node.pk, owner="gw1#a") is not None
    assert node_claim(node_id=node.pk, owner="gw2#b") is None
    node.refresh_from_db()
    assert node.lease_owner == "gw1#a" and node.status == NodeStatus.RUNNING


def test_nodes_wait_for_their_dependencies_and_not_before(agent, clock):
    first, second = queue_sends(conversation_with(agent, "A"), 2)
    TaskNode.objects.filter(pk=first.pk).update(not_before=clock.now() + dt.timedelta(seconds=30))
    ticker = Ticker(gateway_id="gw")
    assert ticker.claim(agent_ids=[agent.pk]) == []
    clock.advance(30)
    assert [n.pk for n, _ in ticker.claim(agent_ids=[agent.pk])] == [first.pk]


def test_an_expired_node_lease_returns_the_node_to_pending(agent, clock, settings):
    (node,) = queue_sends(conversation_with(agent, "A"), 1)
    node_claim(node_id=node.pk, owner="gone#x", lease_seconds=60)
    assert nodes_reap_expired(agent_ids=[agent.pk]) == 0
    clock.advance(61)
    assert nodes_reap_expired(agent_ids=[agent.pk]) == 1
    node.refresh_from_db()
    assert node.status == NodeStatus.PENDING and node.lease_owner == "" and node.attempts == 0


def test_a_gateway_taking_over_an_agent_resumes_nodes_left_running(agent, clock):
    (node,) = queue_sends(conversation_with(agent, "A"), 1)
    node_claim(node_id=node.pk, owner="dead-gateway#x")
    harness = Harness(clock)
    harness.start()
    node.refresh_from_db()
    assert node.status == NodeStatus.PENDING
    harness.settle()
    assert SandboxMessage.objects.filter(sender__agent=agent, text="A 0").count() == 1
    assert TaskGraph.objects.get().status == TaskGraph.Status.DONE


def test_the_eligibility_scan_is_one_query_however_many_conversations(
    agent, clock, django_assert_num_queries
):
    for i in range(20):
        queue_sends(conversation_with(agent, f"P{i}"), 3)
    with django_assert_num_queries(1):  # the head of each active conversation, with its values
        nodes = eligible_nodes(agent_ids=[agent.pk], at=clock.now())
    assert len(nodes) == 20


def test_claiming_a_node_costs_a_fixed_number_of_queries(agent, clock, django_assert_max_num_queries):
    (node,) = queue_sends(conversation_with(agent, "A"), 1)
    # savepoint, compare-and-set, read back, activity event, release savepoint
    with django_assert_max_num_queries(5):
        assert node_claim(node_id=node.pk, owner="gw#1") is not None


def test_a_gagged_conversation_s_pending_nodes_wait_until_it_is_ungagged(agent, clock):
    from cindy_site.clock import now

    chat = conversation_with(agent, "Hushed")
    queue_sends(chat, 1)
    Conversation.objects.filter(pk=chat.pk).update(gagged=True)

    assert eligible_nodes(agent_ids=[agent.pk], at=now()) == []
    Conversation.objects.filter(pk=chat.pk).update(gagged=False)
    assert [n.kind for n in eligible_nodes(agent_ids=[agent.pk], at=now())] == ["send"]


def test_a_paused_agents_due_nodes_do_not_cost_the_tick_a_scan_at_every_pass(agent, other_agent, clock):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    harness = Harness(clock)
    harness.start()
    queue_sends(conversation_with(agent, "A"), 1)
    client = harness.gateway.clients[agent.pk]
    client.paused_until = clock.now() + dt.timedelta(minutes=20)  # a flood wait: its send is due
    harness.tick()  # the first tick also looks for expired node leases
    with CaptureQueriesContext(connection) as queries:
        assert harness.tick() is False
    # Whether a node is due, over the held agents, then over those that may run now (the other
    # agent, with nothing due): no conversation heads read.
    sql = [q["sql"] for q in queries]
    assert len(sql) == 2 and all(s.startswith("SELECT 1 FROM") and "LIMIT 1" in s for s in sql), sql
    client.paused_until = None
    assert harness.tick() is True  # the pause over, the send runs
