"""Finishing a task graph once its last node ended, and what follows: a conversation left idle is
checked for a due summarization turn. Apart from `conversations.services.graphs` because summaries
start their turns through it."""

from __future__ import annotations

from cindy_site.clock import now
from conversations.models import TaskGraph, TaskNode
from conversations.services.graphs import OPEN_NODE_STATUSES, graph_start_queued
from conversations.services.summaries import summarization_start_if_due


def graph_finish_if_complete(*, graph_id: int) -> bool:
    """Mark the graph done once none of its nodes is pending or running.

    The triggers queued behind it then start their turn, and a conversation left idle is checked for a
    due summarization turn (see services.summaries).
    """
    if TaskNode.objects.filter(graph_id=graph_id, status__in=OPEN_NODE_STATUSES).exists():
        return False
    finished = bool(
        TaskGraph.objects.filter(pk=graph_id, status=TaskGraph.Status.ACTIVE).update(
            status=TaskGraph.Status.DONE, active_slot=None, finished=now()
        )
    )
    if finished:
        graph = TaskGraph.objects.select_related("conversation").get(pk=graph_id)
        graph_start_queued(graph=graph)
        summarization_start_if_due(conversation_id=graph.conversation_id)
    return finished
