"""The planning watchdog: planning that no worker starts is shown, and our own workers are restarted."""

from __future__ import annotations

import os
import subprocess

import pytest

from conversations.models import ActivityEvent, NodeStatus, TaskNode
from conversations.services.graphs import graph_replan
from engine.tests.harness import Harness
from engine.tests.test_tick import conversation_with
from llm.usage import llm_call_start

pytestmark = pytest.mark.django_db


def claimed_planning(agent, clock) -> tuple[Harness, TaskNode]:
    """A gateway that claimed a planning node and queued it; no worker ever takes it."""
    conversation = conversation_with(agent, "Pat")
    graph_replan(conversation=conversation, trigger="message", target_message_id=None)
    harness = Harness(clock)
    harness.start()
    harness.tick()
    node = TaskNode.objects.get(kind="received")
    assert node.status == NodeStatus.RUNNING and harness.queued
    return harness, node


def planning_call(agent, *, conversation_id: int | None = None, node_id: int | None = None):
    """An LLM planning call of `agent` started now (pending: in flight on some worker)."""
    return llm_call_start(
        provider="gemini",
        model="gemini-3-flash-preview",
        purpose="plan",
        agent_id=agent.pk,
        conversation_id=conversation_id,
        node_id=node_id,
    )


def stalled_events() -> list[str]:
    return list(
        ActivityEvent.objects.filter(summary__startswith="planning").values_list("summary", flat=True)
    )


def test_planning_no_worker_starts_is_reported_once_queued_again_and_its_end_reported(
    agent, clock, settings, fake_llm
):
    settings.CINDY_PLANNING_STALL_SECONDS = 45
    harness, node = claimed_planning(agent, clock)
    lost_task = harness.queued.pop()  # the pool that had it was replaced: nobody will run it
    clock.advance(40)
    harness.step("workers")
    assert stalled_events() == []

    clock.advance(10)
    harness.step("workers")
    [stalled] = stalled_events()
    assert stalled.startswith("planning stalled: 1 planning task(s) queued over 45 s ago have not started")
    assert ActivityEvent.objects.get(summary=stalled).kind == "agent_error"
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.PENDING  # to be queued again

    harness.tick()  # claimed and queued again; still no worker: reported only once
    clock.advance(50)
    harness.step("workers")
    assert stalled_events() == [stalled]

    harness.tick()
    harness.queued.insert(0, lost_task)  # the lost task turns up after all: it does nothing
    harness.work()
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.DONE
    assert len(fake_llm.requests) == 1
    clock.advance(10)
    harness.step("workers")
    assert stalled_events()[0] == "planning resumed"


def test_a_pool_busy_with_slow_llm_calls_is_not_a_stall(agent, clock, settings):
    settings.CINDY_PLANNING_STALL_SECONDS = 45
    harness, node = claimed_planning(agent, clock)
    planning_call(agent)  # another chat's planning, in flight on the only worker
    clock.advance(120)
    harness.step("workers")
    assert stalled_events() == []


class RecordingWorkers:
    """Stands in for `WorkerProcess`: records the restarts the watchdog asks for."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def step(self) -> bool:
        return False

    def stop(self) -> None:
        self.calls.append("stop")

    def start(self) -> None:
        self.calls.append("start")


def test_our_own_workers_are_restarted_with_a_growing_grace_while_planning_stays_stuck(
    agent, clock, settings
):
    settings.CINDY_PLANNING_STALL_SECONDS = 45
    harness, node = claimed_planning(agent, clock)
    workers = harness.gateway.context.workers = RecordingWorkers()
    clock.advance(50)
    harness.step("workers")
    assert workers.calls == ["stop", "start"]
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.PENDING  # queued again for the new pool
    assert "restarting the task workers" in stalled_events()[0]

    harness.tick()  # the new pool does not start it either
    clock.advance(50)
    harness.step("workers")
    assert workers.calls == ["stop", "start"] * 2
    harness.tick()
    clock.advance(50)  # the third restart waits twice as long
    harness.step("workers")
    assert workers.calls == ["stop", "start"] * 2
    clock.advance(45)
    harness.step("workers")
    assert workers.calls == ["stop", "start"] * 3


def test_planning_whose_worker_was_killed_runs_again_at_once_however_busy_the_other_workers(
    agent, clock, settings, fake_llm
):
    """Workers run apart from the gateway (`runagents --no-workers` + `runworkers`): a busy worker is
    killed and `runworkers` replaces its pool, closing the calls the pool had in flight. The gateway
    re-runs that planning at its next check, not after CINDY_Q_TIMEOUT, and only once in effect."""
    from llm.models import LLMCall
    from llm.usage import llm_calls_interrupt, worker_name

    settings.CINDY_PLANNING_STALL_SECONDS = 45
    harness, node = claimed_planning(agent, clock)
    assert harness.gateway.context.workers is None
    killed_task = harness.queued.pop()
    killed = planning_call(agent, conversation_id=node.conversation_id, node_id=node.pk)
    busy = planning_call(agent)
    LLMCall.objects.filter(pk=killed.pk).update(worker=worker_name(4242))
    LLMCall.objects.filter(pk=busy.pk).update(worker=worker_name(os.getppid()))  # another pool, still busy
    assert llm_calls_interrupt(pids=[4242]) == 1

    clock.advance(6)  # one watchdog check later, far below CINDY_Q_TIMEOUT
    harness.step("workers")
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.PENDING
    assert any("task worker of 1 planning task(s) was killed" in s for s in stalled_events())
    assert LLMCall.objects.get(pk=busy.pk).status == "pending"

    harness.tick()
    harness.queued.insert(0, killed_task)  # the killed worker's task, redelivered: it does nothing
    harness.work()
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.DONE
    assert len(fake_llm.requests) == 1


def test_a_shared_pool_replaced_returns_the_planning_it_lost_and_leaves_calls_in_flight(agent, clock):
    """`runworkers` without a gateway of its own, after a sudden death: the planning nodes with no call
    in flight go back to pending at once (their tasks were in the dead pool's queue); a node whose call
    another pool is making keeps running."""
    from conversations.services.graphs import graph_replan as replan
    from engine.tests.test_tick import conversation_with
    from llm.usage import brain_nodes_release_unstarted

    harness, lost = claimed_planning(agent, clock)
    busy_chat = conversation_with(agent, "Sam")
    replan(conversation=busy_chat, trigger="message", target_message_id=None)
    harness.tick()
    busy = TaskNode.objects.get(kind="received", conversation=busy_chat)
    planning_call(agent, conversation_id=busy_chat.pk, node_id=busy.pk)

    assert brain_nodes_release_unstarted(reason="task workers replaced") == 1
    assert TaskNode.objects.get(pk=lost.pk).status == NodeStatus.PENDING
    assert TaskNode.objects.get(pk=busy.pk).status == NodeStatus.RUNNING


def test_planning_whose_call_finished_before_its_pool_was_replaced_runs_again_on_that_reply(
    agent, clock, fake_llm
):
    """The worker got its reply and died with the replaced pool before storing the plan: the node goes
    back to pending and its next run reuses the finished call, with no second request."""
    from llm.planning import plan_turn
    from llm.usage import brain_nodes_release_unstarted

    harness, node = claimed_planning(agent, clock)
    fake_llm.reply_with('[{"kind": "send", "text": "hi"}]')
    plan_turn(node_id=node.pk)  # the call finished; the worker died before received_apply
    assert len(fake_llm.requests) == 1

    assert brain_nodes_release_unstarted(reason="task workers replaced") == 1
    harness.queued.clear()
    harness.settle()
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.DONE
    assert len(fake_llm.requests) == 1


def _gone_pid() -> int:
    """The pid of a process of this host that ran and was reaped: it no longer exists."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_call_left_pending_by_a_worker_that_no_longer_exists_does_not_pass_for_a_busy_pool(
    agent, clock, settings
):
    """The slow path of a killed pool: a planning call its worker left pending (the replacement could
    not close it, or `runworkers` itself was killed and its successor never knew that pid) counted as
    a busy pool, so the stall stayed hidden and the planning waited for CINDY_Q_TIMEOUT (300 s). The
    next check (5 s) closes such a call and queues the planning again; a live worker's call stays."""
    from llm.models import LLMCall
    from llm.usage import worker_name

    settings.CINDY_PLANNING_STALL_SECONDS = 45
    harness, node = claimed_planning(agent, clock)
    assert harness.gateway.context.workers is None  # the production layout: workers run apart
    lost = planning_call(agent, conversation_id=node.conversation_id, node_id=node.pk)
    busy = planning_call(agent)
    elsewhere = planning_call(agent)
    dead = _gone_pid()
    LLMCall.objects.filter(pk=lost.pk).update(worker=worker_name(dead))
    LLMCall.objects.filter(pk=busy.pk).update(worker=worker_name(os.getppid()))  # a live worker
    LLMCall.objects.filter(pk=elsewhere.pk).update(worker=f"another-host:{dead}")  # not ours to judge

    clock.advance(6)  # one check, far below CINDY_Q_TIMEOUT
    harness.step("workers")
    assert LLMCall.objects.get(pk=lost.pk).status == LLMCall.Status.INTERRUPTED
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.PENDING
    assert any("task worker of 1 planning task(s) was killed" in s for s in stalled_events())
    assert LLMCall.objects.get(pk=busy.pk).status == LLMCall.Status.PENDING
    assert LLMCall.objects.get(pk=elsewhere.pk).status == LLMCall.Status.PENDING


def claimed_by_another_gateway(agent) -> tuple[TaskNode, str]:
    """A chat's planning claimed by a gateway that is gone (the agent's previous holder)."""
    from conversations.services.nodes import nodes_claim

    graph_replan(conversation=conversation_with(agent, "Pat"), trigger="message", target_message_id=None)
    node = TaskNode.objects.get(kind="received")
    old_claim = "gw-gone:4242:0ff1ce#1"
    assert nodes_claim(node_ids=[node.pk], owner=old_claim, lease_seconds=600)
    return node, old_claim


@pytest.mark.parametrize(
    "worker",
    [
        "never started",
        "its call in flight",
        "its task run by a live worker",
        "its worker gone",
        "its call interrupted",
    ],
)
def test_planning_the_previous_holder_claimed_and_never_queued_is_queued_again_by_the_new_one(
    agent, clock, settings, worker
):
    """A gateway claimed a chat's planning and was cut off before its task reached the queue; the
    agent's next gateway queues it again once it has waited the stall limit, without calling it a
    stall. Planning a live worker has (its run mark, or an LLM call in flight) is left to it; a
    worker that died with it (a mark of a gone process, an interrupted call) counts as none."""
    from engine.task_deaths import task_run_start
    from llm.models import LLMCall
    from llm.usage import worker_name

    settings.CINDY_PLANNING_STALL_SECONDS = 45
    node, old_claim = claimed_by_another_gateway(agent)
    if worker in ("its task run by a live worker", "its worker gone"):
        assert task_run_start(node_id=node.pk, owner=old_claim)  # marked by this (live) process
        if worker == "its worker gone":
            node.refresh_from_db()
            node.params["task_run"]["worker"] = worker_name(_gone_pid())
            TaskNode.objects.filter(pk=node.pk).update(params=node.params)
    if worker in ("its call in flight", "its call interrupted"):
        call = planning_call(agent, conversation_id=node.conversation_id, node_id=node.pk)
        if worker == "its call interrupted":
            LLMCall.objects.filter(pk=call.pk).update(status=LLMCall.Status.INTERRUPTED)
    call_started = worker in ("its call in flight", "its task run by a live worker")
    harness = Harness(clock)  # the gateway that holds the agent now
    harness.start()
    clock.advance(40)
    harness.step("workers")
    assert TaskNode.objects.get(pk=node.pk).lease_owner == old_claim

    clock.advance(10)
    harness.step("workers")
    node.refresh_from_db()
    if call_started:
        assert (node.status, node.lease_owner) == (NodeStatus.RUNNING, old_claim)
        assert stalled_events() == []
        return
    assert node.status == NodeStatus.PENDING
    assert stalled_events() == [
        "planning queued again: the gateway that held this agent before claimed it and its task had "
        "not started in 45 s"
    ]
    harness.tick()  # the new holder claims it and queues it
    node.refresh_from_db()
    assert node.status == NodeStatus.RUNNING and node.lease_owner.startswith(harness.gateway.gateway_id)
    assert harness.queued


def test_planning_the_previous_holder_claimed_waits_while_the_task_queue_has_a_backlog(
    agent, clock, settings
):
    """Behind a backlog its own task may still be queued: queued again, the chat would wait the backlog
    twice. Once no task waits in the queue, a task of its own can no longer be there."""
    settings.CINDY_PLANNING_STALL_SECONDS = 45
    node, old_claim = claimed_by_another_gateway(agent)
    harness = Harness(clock)
    harness.start()
    backlog = [12]
    harness.gateway.watchdog.waiting = lambda: backlog[0]

    for step in (50, 5, 5):  # 50 to 60 s after the claim, the queue still busy
        clock.advance(step)
        harness.step("workers")
        assert TaskNode.objects.get(pk=node.pk).lease_owner == old_claim
    assert stalled_events() == []

    backlog[0] = 0
    clock.advance(5)
    harness.step("workers")
    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.PENDING
    assert len(stalled_events()) == 1


def test_the_task_queue_s_backlog_counts_the_tasks_no_worker_has_taken(db, monkeypatch):
    """What the watchdog reads (`tasks_waiting`): the database broker's queued rows whose lock has
    not been taken; a task a worker took (its lock in the future) is not waiting."""
    import datetime as dt

    from django.utils import timezone
    from django_q.models import OrmQ

    from engine import dispatch
    from engine.taskwake import TaskBroker
    from engine.watchdog import tasks_waiting

    broker = TaskBroker(list_key="cindy")
    monkeypatch.setattr(dispatch, "task_broker", lambda: broker)
    assert tasks_waiting() == 0
    broker.enqueue("a signed package")
    broker.enqueue("another")
    assert tasks_waiting() == 2
    OrmQ.objects.filter(payload="another").update(lock=timezone.now() + dt.timedelta(seconds=360))
    assert tasks_waiting() == 1

    def unreachable():
        raise ConnectionError("the broker is down")

    monkeypatch.setattr(dispatch, "task_broker", unreachable)
    assert tasks_waiting() == 0
