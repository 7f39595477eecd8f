"""The tick's claim with a backlog: the rows it reads stay flat, it stays fair, and it stays a
compare-and-set when another gateway claims at the same moment."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db.models.signals import post_init

from agents.models import Agent
from conversations.models import ActivityEvent, Conversation, NodeKind, NodeStatus, TaskGraph, TaskNode
from conversations.selectors import eligible_nodes
from conversations.services import activity
from conversations.services.nodes import event_for, node_claim
from engine import tick
from engine.tests.cast import make_agent
from engine.tick import MAX_NODES_PER_TICK, SCAN_LIMIT, Ticker

pytestmark = pytest.mark.django_db

DependsOn = TaskNode.depends_on.through


def open_conversations(agent: Agent, count: int, *, first_peer: int = 50_000) -> list[TaskGraph]:
    """`count` conversations of `agent`, each with an active graph and no node yet."""
    conversations = Conversation.objects.bulk_create(
        Conversation(agent=agent, peer_id=first_peer + i, kind="dm", title=f"C{i}") for i in range(count)
    )
    return TaskGraph.objects.bulk_create(
        TaskGraph(conversation=c, active_slot=c.pk, trigger="message", created=c.created)
        for c in conversations
    )


def queue(graphs: list[TaskGraph], per_graph: int, *, kind: str, at: dt.datetime) -> list[TaskNode]:
    """`per_graph` pending nodes in each graph, all due at `at` and none waiting for another (a plan
    whose tasks name no dependencies between them)."""
    return TaskNode.objects.bulk_create(
        TaskNode(
            graph=g,
            conversation_id=g.conversation_id,
            agent_id=g.conversation.agent_id,
            kind=kind,
            sequence=i,
            not_before=at,
            created=at,
        )
        for g in graphs
        for i in range(per_graph)
    )


class NodesBuilt:
    """Counts TaskNode objects built while it is open (a values read builds none)."""

    def __init__(self) -> None:
        self.count = 0

    def _built(self, sender, **kwargs) -> None:
        self.count += 1

    def __enter__(self) -> NodesBuilt:
        post_init.connect(self._built, sender=TaskNode)
        return self

    def __exit__(self, *exc) -> None:
        post_init.disconnect(self._built, sender=TaskNode)


def test_ten_thousand_pending_nodes_in_five_conversations_read_five_candidates(agent, clock):
    queue(open_conversations(agent, 5), 2_000, kind=NodeKind.RECEIVED, at=clock.now())

    with NodesBuilt() as built:
        candidates = eligible_nodes(agent_ids=[agent.pk], at=clock.now(), limit=SCAN_LIMIT)
    assert len(candidates) == 5
    assert len({c.conversation_id for c in candidates}) == 5
    assert built.count == 0

    with NodesBuilt() as built:
        won = Ticker(gateway_id="gw").claim(agent_ids=[agent.pk])
    assert len(won) == 5
    assert built.count == 5  # only the nodes won are loaded, to be run
    assert TaskNode.objects.filter(status=NodeStatus.RUNNING).count() == 5


def test_the_candidate_of_a_conversation_is_its_oldest_node_whose_dependencies_are_done(agent, clock):
    (graph,) = open_conversations(agent, 1)
    earlier = clock.now() - dt.timedelta(minutes=5)
    retried, wait = queue([graph], 2, kind=NodeKind.SEND, at=earlier)
    # A retried send waits for the `wait` node put in front of it: the wait is what runs first.
    TaskNode.objects.filter(pk=wait.pk).update(kind=NodeKind.WAIT, not_before=clock.now())
    DependsOn.objects.create(from_tasknode_id=retried.pk, to_tasknode_id=wait.pk)
    queue([graph], 1, kind=NodeKind.SEND, at=clock.now() + dt.timedelta(seconds=30))  # not due yet

    assert [c.id for c in eligible_nodes(agent_ids=[agent.pk], at=clock.now())] == [wait.pk]
    TaskNode.objects.filter(pk=wait.pk).update(status=NodeStatus.DONE)
    clock.advance(2)
    assert [c.id for c in eligible_nodes(agent_ids=[agent.pk], at=clock.now())] == [retried.pk]


@pytest.mark.parametrize("flag", ["disabled", "gagged", "stopped"])
def test_an_agent_that_may_not_act_has_no_candidates(agent, clock, flag):
    queue(open_conversations(agent, 2), 1, kind=NodeKind.SEND, at=clock.now())
    Agent.objects.filter(pk=agent.pk).update(**{flag: True})
    assert eligible_nodes(agent_ids=[agent.pk], at=clock.now()) == []


def test_a_quiet_conversation_is_claimed_beside_a_backlog_larger_than_any_scan(agent, clock):
    """A conversation with more queued nodes than the old 5,000-row scan does not crowd out a chat
    with one newer node: each conversation offers one candidate."""
    busy, quiet = open_conversations(agent, 2)
    queue([busy], 5_001, kind=NodeKind.RECEIVED, at=clock.now() - dt.timedelta(minutes=1))
    queue([quiet], 1, kind=NodeKind.RECEIVED, at=clock.now())

    won = Ticker(gateway_id="gw").claim(agent_ids=[agent.pk])

    assert sorted(node.conversation_id for node, _ in won) == sorted(
        [busy.conversation_id, quiet.conversation_id]
    )


def test_with_more_waiting_conversations_than_the_scan_each_comes_up_within_a_round(agent, clock):
    """An agent with more waiting chats than one read takes does not keep another agent's chat out
    for longer than a round: the next read carries on from where the last one stopped."""
    other = make_agent("Heidi", phone="+15550000002")
    crowded = open_conversations(agent, SCAN_LIMIT + 1)
    queue(crowded, 1, kind=NodeKind.RECEIVED, at=clock.now() - dt.timedelta(minutes=1))
    (lonely,) = queue(
        open_conversations(other, 1, first_peer=90_000), 1, kind=NodeKind.RECEIVED, at=clock.now()
    )
    ticker = Ticker(gateway_id="gw")

    first = ticker.claim(agent_ids=[agent.pk, other.pk])
    second = ticker.claim(agent_ids=[agent.pk, other.pk])

    assert len(first) == len(second) == MAX_NODES_PER_TICK
    assert lonely.pk not in [node.pk for node, _ in first]  # beyond the first read
    # the second read starts past the first: the other agent, served least, goes first
    assert second[0][0].pk == lonely.pk
    last_of_first_read = crowded[SCAN_LIMIT - 1].conversation_id
    assert all(node.conversation_id <= last_of_first_read for node, _ in first)
    # and every conversation was claimed once by the end of the round
    rest = [ticker.claim(agent_ids=[agent.pk, other.pk]) for _ in range(3)]
    claimed = [node.pk for batch in [first, second, *rest] for node, _ in batch]
    assert len(claimed) == len(set(claimed)) == SCAN_LIMIT + 2


def test_a_read_takes_at_most_the_scan_however_many_conversations_wait(
    agent, clock, django_assert_num_queries
):
    graphs = open_conversations(agent, 2 * SCAN_LIMIT - 1)
    queue(graphs, 1, kind=NodeKind.RECEIVED, at=clock.now())
    ticker = Ticker(gateway_id="gw")
    with NodesBuilt() as built, django_assert_num_queries(1):
        candidates = ticker.candidates(agent_ids=[agent.pk], at=clock.now())
    assert built.count == 0
    assert [c.conversation_id for c in candidates] == [g.conversation_id for g in graphs[:SCAN_LIMIT]]
    # The next read carries on after them and, reaching the end, goes round from the first (one
    # query more).
    with django_assert_num_queries(2):
        candidates = ticker.candidates(agent_ids=[agent.pk], at=clock.now())
    assert sorted(c.conversation_id for c in candidates) == sorted(
        g.conversation_id for g in [graphs[0], *graphs[SCAN_LIMIT:]]
    )


def test_candidates_come_oldest_first_to_the_microsecond_also_when_a_read_goes_round(
    agent, clock, monkeypatch
):
    """Heads are ordered by `not_before` as stored text: a whole second (no fraction stored) sorts
    before and after fractions correctly, and the two reads of a pass that goes round merge."""
    graphs = open_conversations(agent, 5)
    nodes = [queue([g], 1, kind=NodeKind.RECEIVED, at=clock.now())[0] for g in graphs]
    offsets = [-1.0, -0.5, -1.000001, 0.0, -0.25]  # seconds before the clock's whole second
    for node, offset in zip(nodes, offsets, strict=True):
        TaskNode.objects.filter(pk=node.pk).update(not_before=clock.now() + dt.timedelta(seconds=offset))
    oldest_first = [node.pk for _, node in sorted(zip(offsets, nodes, strict=True), key=lambda p: p[0])]

    assert [c.id for c in eligible_nodes(agent_ids=[agent.pk], at=clock.now())] == oldest_first

    monkeypatch.setattr(tick, "SCAN_LIMIT", 3)
    ticker = Ticker(gateway_id="gw")
    first = ticker.candidates(agent_ids=[agent.pk], at=clock.now())
    assert sorted(c.id for c in first) == sorted(n.pk for n in nodes[:3])
    # The next read takes the last two, then goes round to the first conversation.
    second = ticker.candidates(agent_ids=[agent.pk], at=clock.now())
    assert [c.id for c in second] == [
        pk for pk in oldest_first if pk in {nodes[0].pk, nodes[3].pk, nodes[4].pk}
    ]


def test_telegram_kinds_still_run_one_per_agent_per_tick_with_a_backlog(agent, other_agent, clock):
    queue(open_conversations(agent, 30), 3, kind=NodeKind.SEND, at=clock.now())
    queue(open_conversations(other_agent, 30, first_peer=90_000), 3, kind=NodeKind.SEND, at=clock.now())

    won = Ticker(gateway_id="gw").claim(agent_ids=[agent.pk, other_agent.pk])

    assert sorted(node.agent_id for node, _ in won) == sorted([agent.pk, other_agent.pk])


@pytest.mark.parametrize("per_conversation", [1, 50])
def test_a_claim_pass_costs_the_same_queries_however_long_the_backlog(
    agent, other_agent, clock, django_assert_num_queries, per_conversation
):
    """A full tick over 200 conversations, with one or fifty pending nodes each (10,000 nodes)."""
    queue(
        open_conversations(agent, MAX_NODES_PER_TICK),
        per_conversation,
        kind=NodeKind.RECEIVED,
        at=clock.now(),
    )
    queue(open_conversations(other_agent, 2, first_peer=90_000), 1, kind=NodeKind.RECEIVED, at=clock.now())
    ticker = Ticker(gateway_id="gw")
    # due check, the next node of each waiting conversation with its values; then the claim:
    # savepoint, compare-and-set UPDATE, read of the rows won, their agents, the claimed events,
    # release savepoint
    with django_assert_num_queries(8):
        won = ticker.claim(agent_ids=[agent.pk, other_agent.pk])
    assert len(won) == MAX_NODES_PER_TICK
    assert {node.agent_id for node, _ in won} == {agent.pk, other_agent.pk}


def test_a_node_another_gateway_claims_between_the_read_and_the_claim_is_not_taken_twice(
    agent, clock, monkeypatch
):
    graphs = open_conversations(agent, 4)
    queue(graphs, 2, kind=NodeKind.RECEIVED, at=clock.now())
    read = tick.candidates_in_turns
    taken: list[int] = []

    def read_then_lose_one(**kwargs):
        candidates = read(**kwargs)
        # Another gateway claims the first candidate after this one read it.
        assert node_claim(node_id=candidates[0].id, owner="gw2#other") is not None
        taken.append(candidates[0].id)
        return candidates

    monkeypatch.setattr(tick, "candidates_in_turns", read_then_lose_one)
    won = Ticker(gateway_id="gw1").claim(agent_ids=[agent.pk])

    assert len(won) == 3 and taken[0] not in [node.pk for node, _ in won]
    assert all(owner.startswith("gw1#") and node.lease_owner == owner for node, owner in won)
    lost = TaskNode.objects.get(pk=taken[0])
    assert lost.status == NodeStatus.RUNNING and lost.lease_owner == "gw2#other"
    claimed = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.NODE_CLAIMED)
    assert sorted(claimed.values_list("node_id", flat=True)) == sorted([taken[0], *[n.pk for n, _ in won]])
    # Each of the four conversations now runs exactly one node: nothing is left to claim.
    monkeypatch.setattr(tick, "candidates_in_turns", read)
    assert Ticker(gateway_id="gw1").claim(agent_ids=[agent.pk]) == []
    assert TaskNode.objects.filter(status=NodeStatus.RUNNING).count() == 4


def test_the_claimed_events_are_those_event_for_builds(agent, clock):
    (graph,) = open_conversations(agent, 1)
    (node,) = queue([graph], 1, kind=NodeKind.SEND, at=clock.now())
    TaskNode.objects.filter(pk=node.pk).update(attempts=2)

    (won,) = Ticker(gateway_id="gw-a").claim(agent_ids=[agent.pk])

    stored = ActivityEvent.objects.get(kind=ActivityEvent.Kind.NODE_CLAIMED)
    built = event_for(ActivityEvent.Kind.NODE_CLAIMED, won[0], "claimed by gw-a", attempt=3, when=clock.now())
    fields = ["created", "kind", "agent_id", "conversation_id", "node_id", "summary", "data"]
    assert {f: getattr(stored, f) for f in fields} == {f: getattr(built, f) for f in fields}
    assert stored.data == {"kind": "send", "graph_id": graph.pk, "attempt": 3}


def test_the_events_insert_writes_every_column_of_an_activity_event():
    """A column added to ActivityEvent must be added to `events_insert` too (its rows skip the model)."""
    columns = {f.column for f in ActivityEvent._meta.concrete_fields if not f.primary_key}
    assert columns == set(activity._ROW_COLUMNS)
