"""The tick's planning dispatch (engine/dispatch.py): a tick's chats synced, marked read and queued together."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from asgiref.sync import async_to_sync
from django.test import TestCase
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from conversations.models import Conversation, NodeStatus, TaskNode
from conversations.transport.base import PermanentError, TransportError
from engine.dispatch import enqueue_received, enqueue_received_many
from engine.responsiveness import agents_asleep, asleep_until
from engine.tests.cast import make_agent
from engine.tests.harness import Harness
from memory.models import ScheduleEntry
from sandbox.models import SandboxMember, SandboxMessage, SandboxUser
from sandbox.services.chats import sandbox_chat_for, sandbox_post, sandbox_say, sandbox_user_for_agent
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db

PEOPLE = ("Ann", "Bob", "Cid")


class RecordingSandbox(SandboxTransport):
    """The sandbox, logging each history fetch and read mark; a peer in `failing` fails its fetch."""

    log: list[tuple[str, int]] = []
    failing: set[int] = set()

    async def history(self, peer_id, *, since_id=None, around_id=None, limit=100):
        RecordingSandbox.log.append(("history", peer_id))
        if peer_id in RecordingSandbox.failing:
            raise TransportError("history request timed out")
        return await super().history(peer_id, since_id=since_id, around_id=around_id, limit=limit)

    async def mark_read(self, peer_id, max_id):
        RecordingSandbox.log.append(("mark_read", peer_id))
        await super().mark_read(peer_id, max_id)


@pytest.fixture
def recording(agent, clock, fake_llm):
    RecordingSandbox.log, RecordingSandbox.failing = [], set()
    h = Harness(clock, transport_factory=lambda a, gateway_id="": RecordingSandbox(a, gateway_id=gateway_id))
    h.gateway.context.enqueue = lambda node_id, owner: (
        RecordingSandbox.log.append(("enqueue", node_id)),
        h.queued.append((node_id, owner)),
    )
    h.start()
    return h


def _peer(name: str) -> int:
    return SandboxUser.objects.get(name=name).user_id


def _messages_from_everyone(agent, harness, clock, settings) -> dict[str, TaskNode]:
    for name in PEOPLE:
        sandbox_say(agent=agent, text=f"hello from {name}", as_name=name)
    harness.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    return {name: TaskNode.objects.get(kind="received", conversation__peer_id=_peer(name)) for name in PEOPLE}


def test_one_chat_whose_sync_fails_is_planned_unread_and_the_others_as_usual(
    agent, recording, clock, settings, caplog
):
    nodes = _messages_from_everyone(agent, recording, clock, settings)
    RecordingSandbox.failing = {_peer("Bob")}

    with caplog.at_level(logging.WARNING, logger="engine.gateway"):
        recording.tick()

    assert sorted(node_id for node_id, _ in recording.queued) == sorted(n.pk for n in nodes.values())
    assert all(TaskNode.objects.get(pk=n.pk).status == NodeStatus.RUNNING for n in nodes.values())
    read = {name: Conversation.objects.get(peer_id=_peer(name)).last_read_message_id for name in PEOPLE}
    assert read == {"Ann": 1, "Bob": None, "Cid": 1}
    assert ("mark_read", _peer("Bob")) not in RecordingSandbox.log
    assert "history request timed out" in caplog.text


def test_each_chat_is_synced_then_marked_read_before_its_planning_is_queued_in_claim_order(
    agent, recording, clock, settings
):
    nodes = _messages_from_everyone(agent, recording, clock, settings)
    recording.tick()

    log = RecordingSandbox.log
    for name, node in nodes.items():
        peer = _peer(name)
        assert log.index(("history", peer)) < log.index(("mark_read", peer)) < log.index(("enqueue", node.pk))
    # One agent, messages of one moment: the tick picks the chats oldest node first.
    order = [nodes[name].pk for name in PEOPLE]
    assert [node_id for kind, node_id in log if kind == "enqueue"] == order
    assert [node_id for node_id, _ in recording.queued] == order


def test_messages_the_mirror_missed_are_fetched_before_planning_and_the_chat_read_to_the_newest(
    agent, harness, clock, settings
):
    sandbox_say(agent=agent, text="first", as_name="Ann")
    harness.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    chat = sandbox_chat_for(agent=agent, as_name="Ann")
    ann = SandboxUser.objects.get(name="Ann")
    # Written to the sandbox without an update row: only a history fetch finds it.
    SandboxMessage.objects.create(chat=chat, message_id=2, sender=ann, date=clock.now(), text="second")

    harness.tick()

    conversation = Conversation.objects.get(peer_id=ann.user_id)
    assert list(conversation.messages.order_by("message_id").values_list("text", flat=True)) == [
        "first",
        "second",
    ]
    assert conversation.last_read_message_id == 2
    me = sandbox_user_for_agent(agent=agent)
    assert SandboxMember.objects.get(chat=chat, user=me).read_up_to == 2
    assert len(harness.queued) == 1


def test_a_node_that_cannot_be_queued_goes_back_to_pending_and_the_others_are_queued(
    agent, harness, clock, settings
):
    nodes = _messages_from_everyone(agent, harness, clock, settings)
    refused = nodes["Bob"].pk

    def enqueue(node_id: int, owner: str) -> None:
        if node_id == refused:
            raise ConnectionError("broker away")
        harness.queued.append((node_id, owner))

    harness.gateway.context.enqueue = enqueue
    harness.tick()

    assert TaskNode.objects.get(pk=refused).status == NodeStatus.PENDING
    assert sorted(node_id for node_id, _ in harness.queued) == sorted([nodes["Ann"].pk, nodes["Cid"].pk])


def test_the_default_queue_writes_every_task_of_a_tick_in_order(agent, clock, fake_llm, settings):
    harness = Harness(clock)
    harness.gateway.context.enqueue = enqueue_received  # django-q2's ORM broker, as `runagents` queues
    harness.start()
    nodes = _messages_from_everyone(agent, harness, clock, settings)

    with TestCase.captureOnCommitCallbacks(execute=True):
        async_to_sync(harness.gateway.steps["tick"].run)()

    tasks = [SignedPackage.loads(row.payload) for row in OrmQ.objects.order_by("pk")]
    assert {t["func"] for t in tasks} == {"engine.tasks.run_received"}
    queued = [t["args"] for t in tasks]
    running = dict(TaskNode.objects.filter(status=NodeStatus.RUNNING).values_list("pk", "lease_owner"))
    # The claim order: one agent, messages of one moment, so oldest node first.
    assert queued == [(nodes[name].pk, running[nodes[name].pk]) for name in PEOPLE]


def test_queueing_many_tasks_matches_queueing_them_one_by_one(db):
    enqueue_received(7, "gw#a")
    enqueue_received_many([(8, "gw#b"), (9, "gw#c")])
    rows = list(OrmQ.objects.order_by("pk"))
    assert [SignedPackage.loads(r.payload)["args"] for r in rows] == [(7, "gw#a"), (8, "gw#b"), (9, "gw#c")]
    assert len({r.key for r in rows}) == 1


# --- the sandbox's batch forms ----------------------------------------------------------------------------


def _connected(agent) -> SandboxTransport:
    transport = SandboxTransport(agent)
    async_to_sync(transport.connect)()
    return transport


def test_history_many_answers_as_history_does_with_errors_in_place(agent, other_agent):
    for name in ("Ann", "Bob"):
        sandbox_say(agent=agent, text=f"hi from {name}", as_name=name)
    sandbox_say(agent=other_agent, text="hi Heidi", as_name="Ann")
    wendy, heidi = _connected(agent), _connected(other_agent)
    requests = [
        (wendy, _peer("Ann"), None, 100),
        (wendy, _peer("Bob"), 1, 100),  # nothing after message 1
        (heidi, _peer("Ann"), 0, 100),
        (wendy, 424242, None, 100),  # no such user
    ]

    answers = async_to_sync(SandboxTransport.history_many)(requests)

    for (transport, peer, since, limit), answer in zip(requests[:3], answers[:3], strict=True):
        assert answer == async_to_sync(transport.history)(peer, since_id=since, limit=limit)
    assert [m.text for m in answers[0]] == ["hi from Ann"] and answers[1] == []
    assert isinstance(answers[3], PermanentError)


def test_mark_read_many_reads_chats_and_reactions_and_never_moves_a_mark_back(agent, other_agent):
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    sandbox_say(agent=other_agent, text="hi", as_name="Ann")
    wendy, heidi = _connected(agent), _connected(other_agent)
    me = sandbox_user_for_agent(agent=agent)
    chat = sandbox_chat_for(agent=agent, as_name="Ann")
    mine, _ = sandbox_post(chat=chat, sender=me, text="how are you?")
    SandboxMessage.objects.filter(pk=mine.pk).update(
        reactions=[{"emoji": "👍", "count": 1, "user_ids": [_peer("Ann")], "unread": True}]
    )
    sandbox_say(agent=agent, text="fine", as_name="Ann")
    heidi_chat = sandbox_chat_for(agent=other_agent, as_name="Ann")
    heidi_me = sandbox_user_for_agent(agent=other_agent)
    SandboxMember.objects.filter(chat=heidi_chat, user=heidi_me).update(read_up_to=5)

    answers = async_to_sync(SandboxTransport.mark_read_many)(
        [(wendy, _peer("Ann"), 3), (heidi, _peer("Ann"), 1), (wendy, 424242, 1)]
    )

    assert answers[:2] == [None, None] and isinstance(answers[2], PermanentError)
    assert SandboxMember.objects.get(chat=chat, user=me).read_up_to == 3
    assert SandboxMember.objects.get(chat=heidi_chat, user=heidi_me).read_up_to == 5
    assert SandboxMessage.objects.get(pk=mine.pk).reactions[0]["unread"] is False


# --- who is asleep ---------------------------------------------------------------------------------------


def test_agents_asleep_decides_as_asleep_until_with_one_query(db, clock, django_assert_num_queries):
    at = clock.now()
    awake, napping, night_owl, dozing, busy = (make_agent(f"A{i}", phone=f"+1555000010{i}") for i in range(5))
    night_owl.daily_schedule, night_owl.timezone = "Asleep: 00:00-23:59", "UTC"
    busy.daily_schedule, busy.timezone = "Asleep: 00:00-23:59", "UTC"  # a schedule entry overrides the lines

    def entry(agent, responsiveness, start, end, entry_id="e"):
        ScheduleEntry.objects.create(
            agent=agent,
            entry_id=entry_id,
            activity="x",
            start=at + dt.timedelta(hours=start),
            end=at + dt.timedelta(hours=end),
            responsiveness=responsiveness,
            created=at,
        )

    entry(napping, 0, -1, 1)
    entry(napping, 0, 1, 2, "e2")
    entry(dozing, 0, 1, 2)  # not yet
    entry(busy, 50, -1, 1)
    agents = [awake, napping, night_owl, dozing, busy]

    with django_assert_num_queries(2):  # the entries of all, then the wake time of the one asleep by entry
        asleep = agents_asleep(agents=agents, at=at)

    assert asleep == {a.pk for a in agents if asleep_until(agent=a, at=at) is not None}
    assert asleep == {napping.pk, night_owl.pk}


def test_queueing_turns_leaves_the_gateways_database_connection_open(transactional_db, monkeypatch):
    """django-q2 builds its broker for each task unless given one, and building it closes the thread's
    old connections (every one, with CONN_MAX_AGE 0): the gateway would connect again for every turn.
    The broker is built once per process instead."""
    from django import db as django_db

    enqueue_received(6, "gw#z")  # the process's broker, if no test built it yet
    closes: list[int] = []
    monkeypatch.setattr(django_db, "close_old_connections", lambda **kwargs: closes.append(1))
    enqueue_received(7, "gw#a")
    enqueue_received_many([(8, "gw#b"), (9, "gw#c")])
    assert closes == []
    assert OrmQ.objects.count() == 4
