"""The death counter of planning tasks (engine/task_deaths.py), on the database.

A run leaves its start mark; the sentinel, seeing that run's worker die alone in its task, counts a
death on the marked node (`task_runs_release`). The process test (test_task_deaths_process.py) kills
real workers; here the counting and the reason are checked step by step, with the media named.
"""

from __future__ import annotations

import pytest

from cindy_site.clock import now
from conversations.models import ActivityEvent, Message, NodeStatus, TaskNode
from conversations.services.graphs import graph_replan
from conversations.services.nodes import node_release
from engine.task_deaths import task_run_end, task_run_start, task_runs_release
from engine.tests.harness import Harness
from engine.tests.test_tick import conversation_with
from llm.usage import worker_name

pytestmark = pytest.mark.django_db

STICKER = {
    "kind": "media",
    "media_kind": "sticker",
    "unique_id": "AgADcrash624",
    "mime_type": "application/x-tgsticker",
}


def claimed(agent, clock, *, media: list | None = None) -> tuple[Harness, TaskNode]:
    conversation = conversation_with(agent, "Pat")
    Message.objects.create(conversation=conversation, message_id=77, date=now(), text="", media=media or [])
    graph_replan(conversation=conversation, trigger="message", target_message_id=77)
    harness = Harness(clock)
    harness.start()
    harness.tick()
    node = TaskNode.objects.get(kind="received")
    assert node.status == NodeStatus.RUNNING
    return harness, node


def this_pid() -> int:
    return int(worker_name().rsplit(":", 1)[1])


def test_a_run_that_returns_leaves_no_mark_and_counts_no_death(agent, clock, fake_llm):
    harness, node = claimed(agent, clock)
    harness.work()
    node.refresh_from_db()
    assert node.status == NodeStatus.DONE
    assert "task_run" not in node.params and "task_deaths" not in node.params
    assert task_runs_release(pid=this_pid()) == (0, 0)


def test_runs_whose_worker_died_are_counted_and_the_last_fails_naming_chat_message_and_media(
    agent, clock, settings
):
    settings.CINDY_TASK_MAX_DEATHS = 2
    harness, node = claimed(agent, clock, media=[STICKER])
    assert task_run_start(node_id=node.pk, owner=node.lease_owner)  # this run's worker dies: no end
    assert task_runs_release(pid=this_pid()) == (1, 0)
    node.refresh_from_db()
    assert node.status == NodeStatus.PENDING and node.params == {"task_deaths": 1}
    deferred = ActivityEvent.objects.filter(node_id=node.pk, kind=ActivityEvent.Kind.NODE_DEFERRED).last()
    assert "died running it (death 1 of 2); queued again" in deferred.summary

    harness.tick()  # queued again, and its worker dies again
    node.refresh_from_db()
    assert node.status == NodeStatus.RUNNING
    assert task_run_start(node_id=node.pk, owner=node.lease_owner)
    assert task_runs_release(pid=this_pid()) == (0, 1)

    node.refresh_from_db()
    assert node.status == NodeStatus.FAILED and node.params == {"task_deaths": 2}
    conversation = node.conversation
    assert node.error.startswith(
        f"planning for conversation {conversation.pk} (Pat), message 77 with media sticker AgADcrash624 "
        f"killed its task worker 2 times (last {worker_name()})"
    ), node.error
    failed = ActivityEvent.objects.filter(node_id=node.pk, kind=ActivityEvent.Kind.NODE_FAILED)
    assert list(failed.values_list("summary", flat=True)) == [f"received #{node.pk}: {node.error}"]


def test_a_mark_left_by_a_killed_pool_is_not_a_death(agent, clock):
    """The whole pool died (gateway killed, pool replaced): the node is re-run, the old mark replaced."""
    harness, node = claimed(agent, clock)
    first = task_run_start(node_id=node.pk, owner=node.lease_owner)
    node_release(node_id=node.pk, owner=node.lease_owner, reason="test: task workers replaced")
    harness.tick()
    node.refresh_from_db()
    second = task_run_start(node_id=node.pk, owner=node.lease_owner)
    node.refresh_from_db()
    assert first != second and node.params["task_run"]["token"] == second
    assert "task_deaths" not in node.params


def test_a_stale_run_ending_late_does_not_clear_the_mark_of_the_current_one(agent, clock):
    harness, node = claimed(agent, clock)
    stale = task_run_start(node_id=node.pk, owner=node.lease_owner)
    node_release(node_id=node.pk, owner=node.lease_owner, reason="test: claimed again")
    harness.tick()
    node.refresh_from_db()
    current = task_run_start(node_id=node.pk, owner=node.lease_owner)
    task_run_end(node_id=node.pk, token=stale)
    node.refresh_from_db()
    assert node.params["task_run"]["token"] == current
    task_run_end(node_id=node.pk, token=current)
    node.refresh_from_db()
    assert "task_run" not in node.params
