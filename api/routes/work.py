"""The work queue: an agent's pending and running nodes, and cancelling them
(`conversations.services.work_queue`, as the admin's work queue actions)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from api.core import (
    DEFAULT_LIMIT,
    ERRORS,
    ApiError,
    ErrorOut,
    Limit,
    Offset,
    RowId,
    page,
    page_schema,
    visible_agent,
)
from api.routes.conversations import agent_conversation
from conversations.models import NodeStatus, TaskNode
from conversations.services.work_queue import WorkQueueError, graph_cancel, node_cancel

router = Router(tags=["work queue"])
VIEW = "conversations.view_tasknode"
# The admin's "cancel" actions ask for the change permission of the rows they act on.
CANCEL_NODE = "conversations.change_tasknode"
CANCEL_GRAPH = "conversations.change_conversation"
QUEUED = (NodeStatus.PENDING, NodeStatus.RUNNING)


class NodeOut(Schema):
    id: int
    graph_id: int
    conversation_id: int
    kind: str
    status: str
    params: dict[str, Any]
    attempts: int
    not_before: dt.datetime
    created: dt.datetime
    started: dt.datetime | None
    error: str


class CancelledOut(Schema):
    cancelled_nodes: int


NodePage = page_schema(NodeOut, "NodePage")
CONFLICT = {409: ErrorOut}


def node_row(node: TaskNode) -> dict[str, Any]:
    return {
        "id": node.pk,
        "graph_id": node.graph_id,
        "conversation_id": node.conversation_id,
        "kind": node.kind,
        "status": node.status,
        "params": node.params if isinstance(node.params, dict) else {},
        "attempts": node.attempts,
        "not_before": node.not_before,
        "created": node.created,
        "started": node.started,
        "error": node.error,
    }


@router.get("/{agent_id}/work", response={200: NodePage, **ERRORS}, summary="List an agent's queued work")
def work_list(request: HttpRequest, agent_id: RowId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0):
    """Pending and running nodes, oldest first."""
    agent = visible_agent(request, agent_id, VIEW)
    nodes = TaskNode.objects.filter(agent=agent, status__in=QUEUED).order_by("created", "id")
    return page(request, nodes, limit=limit, offset=offset, row=node_row)


@router.post(
    "/{agent_id}/work/{node_id}/cancel",
    response={200: NodeOut, **ERRORS, **CONFLICT},
    summary="Cancel one pending node",
)
def work_cancel(request: HttpRequest, agent_id: RowId, node_id: RowId):
    """The nodes that waited for it wait for its own dependencies instead; 409 once it has started."""
    agent = visible_agent(request, agent_id, CANCEL_NODE)
    if not TaskNode.objects.filter(agent=agent, pk=node_id).exists():
        raise ApiError(
            404, f"agent {agent.name} has no node {node_id}: list its work at /agents/{agent.pk}/work"
        )
    try:
        node = node_cancel(node_id=node_id, by=request.user.get_username())
    except WorkQueueError as exc:
        raise ApiError(409, str(exc)) from None
    return node_row(node)


@router.post(
    "/{agent_id}/conversations/{conversation_id}/cancel-work",
    response={200: CancelledOut, **ERRORS, **CONFLICT},
    summary="Cancel a conversation's pending work",
)
def work_cancel_conversation(request: HttpRequest, agent_id: RowId, conversation_id: RowId):
    """The conversation's active graph and the turns queued behind it; 409 when nothing is pending."""
    visible_agent(request, agent_id, CANCEL_GRAPH)
    conversation = agent_conversation(request, agent_id, conversation_id)
    try:
        cancelled = graph_cancel(conversation=conversation, by=request.user.get_username())
    except WorkQueueError as exc:
        raise ApiError(409, str(exc)) from None
    return {"cancelled_nodes": cancelled}
