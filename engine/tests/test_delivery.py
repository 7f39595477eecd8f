"""Nothing lost, nothing paid twice: ingest atomicity, the drain, stale planning tasks, the read delay."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db import OperationalError

import engine.ingest
from agents.models import AgentLease
from conversations.models import ActivityEvent, Message, NodeStatus, TaskGraph, TaskNode
from conversations.transport.base import TransportError
from engine.tasks import run_received
from engine.tests.harness import Harness
from sandbox.services.chats import sandbox_say, sandbox_transcript, sandbox_user_for_agent
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db


def reply(text: str) -> str:
    return json.dumps([{"kind": "send", "text": text}])


@pytest.fixture
def harness(agent, clock, fake_llm):
    fake_llm.set_default_reply(reply("got it"))
    h = Harness(clock)
    h.start()
    return h


def read_mark(agent) -> int:
    return sandbox_user_for_agent(agent=agent).sandboxmember_set.get().read_up_to


# --- ingest, then replan, as one transaction ----------------------------------------------------


def test_a_failed_replan_stores_nothing_so_the_reconnect_answers_the_message(
    agent, harness, clock, fake_llm, monkeypatch
):
    sandbox_say(agent=agent, text="hi")
    harness.settle()
    real_replan = engine.ingest.graph_replan
    failures = []

    def replan_failing_once(**kwargs):
        if not failures:
            failures.append(kwargs)
            raise OperationalError("database is locked")
        return real_replan(**kwargs)

    monkeypatch.setattr(engine.ingest, "graph_replan", replan_failing_once)
    sandbox_say(agent=agent, text="are you there?")
    harness.ingest()
    assert failures, "the replan was not attempted"
    assert not Message.objects.filter(text="are you there?").exists()  # rolled back with the replan
    assert not harness.gateway.clients[agent.pk].connected

    clock.advance(2)
    harness.step("connect")  # the reconciler fetches the message again and triggers on it
    harness.settle()
    assert sandbox_transcript(agent=agent) == [
        "You: hi",
        "Wendy: got it",
        "You: are you there?",
        "Wendy: got it",
    ]
    assert Message.objects.filter(text="are you there?").count() == 1


# --- the drain ------------------------------------------------------------------------------------


class PollFails(SandboxTransport):
    async def poll_updates(self):
        raise TransportError("connection reset")


def test_draining_ingests_the_updates_already_received_before_disconnecting(agent, harness):
    sandbox_say(agent=agent, text="just before the shutdown")
    harness.step("drain")
    assert Message.objects.filter(text="just before the shutdown").exists()
    received = TaskNode.objects.get(kind="received")  # its trigger is kept for the next gateway
    assert received.status == NodeStatus.PENDING
    assert not AgentLease.objects.exists()


def test_a_drain_whose_last_poll_fails_still_releases_the_agent(agent, clock, caplog):
    harness = Harness(clock, transport_factory=lambda a, gateway_id="": PollFails(a, gateway_id=gateway_id))
    harness.start()
    harness.step("drain")
    assert harness.gateway.clients == {}
    assert not AgentLease.objects.exists()
    assert "could not ingest its last updates" in caplog.text
    assert ActivityEvent.objects.filter(kind="agent_offline", summary="gateway stopped").count() == 1


# --- planning tasks act only under their own claim ---------------------------------------------


def test_a_planning_task_of_an_earlier_claim_makes_no_llm_call(agent, harness, clock, fake_llm, settings):
    sandbox_say(agent=agent, text="hello")
    harness.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    harness.tick()
    [(node_id, first_claim)] = harness.queued
    harness.queued.clear()
    # The worker of the first claim vanished; the node lease expires and the node is claimed again.
    clock.advance(settings.CINDY_NODE_LEASE_SECONDS + 1)
    harness.tick()
    [(again, second_claim)] = harness.queued
    assert again == node_id and second_claim != first_claim

    # django-q2 hands the first task out again (or its worker wakes up): it must not plan.
    outcome = run_received(node_id, first_claim)
    assert "stale" in outcome
    assert fake_llm.requests == []
    assert TaskNode.objects.get(pk=node_id).lease_owner == second_claim

    harness.settle()
    assert len(fake_llm.requests) == 1
    assert sandbox_transcript(agent=agent) == ["You: hello", "Wendy: got it"]


def test_a_task_queued_without_a_claim_token_still_plans(agent, harness, clock, fake_llm, settings):
    sandbox_say(agent=agent, text="hello")
    harness.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    harness.tick()
    [(node_id, _)] = harness.queued
    harness.queued.clear()
    run_received(node_id)  # queued by an earlier version, before the token was passed
    assert len(fake_llm.requests) == 1
    assert TaskNode.objects.get(pk=node_id).status == NodeStatus.DONE


def test_a_new_gateway_leaves_a_planning_node_to_its_worker_while_the_node_lease_lasts(
    agent, clock, fake_llm, settings
):
    fake_llm.set_default_reply(reply("sorry, busy day"))
    old = Harness(clock, gateway_id="gw-old")
    old.start()
    sandbox_say(agent=agent, text="hello")
    old.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    old.tick()
    [planning] = old.queued  # its worker is still calling the LLM when the gateway dies

    clock.advance(settings.CINDY_LEASE_SECONDS + 1)
    new = Harness(clock, gateway_id="gw-new")
    new.start()
    assert list(new.gateway.clients) == [agent.pk]
    new.tick()
    assert new.queued == []  # no second planning call for the same turn
    assert TaskNode.objects.get(kind="received").status == NodeStatus.RUNNING

    run_received(*planning)  # the old worker finishes
    new.settle()
    assert len(fake_llm.requests) == 1
    assert sandbox_transcript(agent=agent) == ["You: hello", "Wendy: sorry, busy day"]


def test_a_planning_node_whose_worker_died_is_planned_again_after_its_node_lease(
    agent, clock, fake_llm, settings
):
    fake_llm.set_default_reply(reply("sorry, busy day"))
    old = Harness(clock, gateway_id="gw-old")
    old.start()
    sandbox_say(agent=agent, text="hello")
    old.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    old.tick()
    clock.advance(settings.CINDY_LEASE_SECONDS + 1)
    new = Harness(clock, gateway_id="gw-new")
    new.start()
    new.tick()
    assert new.queued == []
    clock.advance(settings.CINDY_NODE_LEASE_SECONDS)
    new.settle()
    assert len(fake_llm.requests) == 1
    assert sandbox_transcript(agent=agent) == ["You: hello", "Wendy: sorry, busy day"]


# --- the read delay -------------------------------------------------------------------------------


def test_the_chat_is_read_and_planned_only_after_the_read_delay(agent, harness, clock, fake_llm, settings):
    settings.CINDY_READ_DELAY_SECONDS = 3
    sandbox_say(agent=agent, text="hello")
    unread = read_mark(agent)
    harness.ingest()
    node = TaskNode.objects.get(kind="received")
    assert node.not_before == Message.objects.get(text="hello").date + dt.timedelta(seconds=3)

    harness.tick()
    clock.advance(2.9)
    harness.tick()
    assert harness.queued == [] and read_mark(agent) == unread  # not read yet

    clock.advance(0.1)
    harness.tick()
    assert [n for n, _ in harness.queued] == [node.pk]
    assert read_mark(agent) > unread


def test_a_burst_typed_within_the_read_delay_is_read_once_after_the_last_message(
    agent, harness, clock, fake_llm, settings
):
    settings.CINDY_READ_DELAY_SECONDS = 3
    sandbox_say(agent=agent, text="so")
    harness.ingest()
    harness.tick()
    clock.advance(2)
    sandbox_say(agent=agent, text="what are you up to?")
    harness.ingest()
    clock.advance(2)  # 3 s after the first message, 2 s after the last one
    harness.tick()
    assert harness.queued == []
    harness.settle()
    assert len(fake_llm.requests) == 1
    assert TaskGraph.objects.filter(status=TaskGraph.Status.CANCELLED).count() == 1
    last = Message.objects.get(text="what are you up to?")
    claimed = TaskNode.objects.get(kind="received", status=NodeStatus.DONE).started
    assert claimed == last.date + dt.timedelta(seconds=3)


def test_a_message_older_than_the_read_delay_is_planned_at_once(agent, harness, clock, fake_llm, settings):
    settings.CINDY_READ_DELAY_SECONDS = 3
    sandbox_say(agent=agent, text="sent while we were away")
    clock.advance(60)  # fetched late (a reconnect): no extra wait
    harness.ingest()
    harness.tick()
    assert len(harness.queued) == 1


def test_a_gateway_whose_workers_died_with_the_old_one_plans_the_turn_again_at_once(
    agent, clock, fake_llm, settings
):
    from conversations.services.nodes import nodes_take_over

    fake_llm.set_default_reply(reply("hello again"))
    old = Harness(clock, gateway_id="gw-old")
    old.start()
    sandbox_say(agent=agent, text="hello")
    old.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    old.tick()
    assert old.queued  # planning was queued on the old gateway's own workers, which died with it

    assert nodes_take_over(agent_id=agent.pk, gateway_id="gw-new") == 0  # workers may live on
    assert nodes_take_over(agent_id=agent.pk, gateway_id="gw-new", include_brain=True) == 1
    assert TaskNode.objects.get(kind="received").status == NodeStatus.PENDING


def test_a_planning_node_claimed_for_an_agent_dropped_meanwhile_goes_back_to_pending(
    agent, harness, clock, settings
):
    from asgiref.sync import async_to_sync

    sandbox_say(agent=agent, text="hello")
    harness.ingest()
    clock.advance(settings.CINDY_READ_DELAY_SECONDS)
    node = TaskNode.objects.get(kind="received")
    owner = "gw-test#claim"
    TaskNode.objects.filter(pk=node.pk).update(status=NodeStatus.RUNNING, lease_owner=owner)
    harness.gateway.clients.pop(agent.pk)  # fenced by the heartbeat while the tick was claiming

    async_to_sync(harness.gateway.steps["tick"].dispatch.dispatch)(
        [(TaskNode.objects.get(pk=node.pk), owner)]
    )
    node.refresh_from_db()
    assert node.status == NodeStatus.PENDING and harness.queued == []
