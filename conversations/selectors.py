"""Reads for the engine and the dashboard: what the tick may run, and a conversation's history."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import NamedTuple

from django.db.models import Exists, Max, OuterRef, Q, Subquery

from conversations.models import Conversation, Message, NodeStatus, TaskGraph, TaskNode

DependsOn = TaskNode.depends_on.through


def pending_nodes_due(*, agent_ids: Iterable[int], at: dt.datetime) -> bool:
    """Whether any pending node of these agents has reached its `not_before`: the cheap first test of
    an idle tick (`tasknode_eligible_idx`), before the full eligibility scan."""
    agent_ids = list(agent_ids)
    return bool(agent_ids) and (
        TaskNode.objects.filter(
            status=NodeStatus.PENDING, not_before__lte=at, agent_id__in=agent_ids
        ).exists()
    )


class Candidate(NamedTuple):
    """A node the tick may start, as plain values (the tick reads up to `SCAN_LIMIT` per pass)."""

    id: int
    agent_id: int
    conversation_id: int
    kind: str


def conversation_heads(
    *, agent_ids: Iterable[int], at: dt.datetime, limit: int, after: int = 0, upto: int | None = None
) -> list[tuple[int, int]]:
    """(conversation id, node id) of the node each active conversation may start now, at most `limit`,
    in conversation id order from just after `after` (to `upto`, inclusive, when given).

    A conversation's node is its oldest eligible one: pending; `not_before` reached; every dependency
    done; the agent neither disabled, gagged nor stopped; the conversation not gagged; and no node of
    the conversation running (one running node per conversation). One query that walks the active
    graphs in the unique index of `active_slot` (an active graph, and only it, carries its
    conversation's id there; pending and running nodes belong to it, since closing a graph cancels
    them) and stops at `limit` conversations with a node to start. Each conversation costs a few index
    probes (`tasknode_queue_idx`: conversation, status, not_before), so its backlog does not matter: a
    conversation with 10,000 queued nodes costs what one with a single node costs, and finished
    graphs or idle conversations cost nothing.
    """
    agent_ids = list(agent_ids)
    if not agent_ids or limit <= 0:
        return []
    unfinished_dependency = DependsOn.objects.filter(from_tasknode=OuterRef("pk")).exclude(
        to_tasknode__status=NodeStatus.DONE
    )
    head = (
        TaskNode.objects.filter(
            conversation=OuterRef("active_slot"), status=NodeStatus.PENDING, not_before__lte=at
        )
        .filter(~Exists(unfinished_dependency))
        .order_by("not_before", "id")
        .values("id")[:1]
    )
    running = TaskNode.objects.filter(conversation=OuterRef("active_slot"), status=NodeStatus.RUNNING)
    # The conversation's agent, if it and its agent may act: a scalar subquery rather than a join or
    # EXISTS, which MariaDB would turn into a join driven by the agents' conversations.
    acting_agent = Conversation.objects.filter(
        pk=OuterRef("active_slot"),
        gagged=False,
        agent__disabled=False,
        agent__gagged=False,
        agent__stopped=False,
    ).values("agent_id")[:1]
    graphs = TaskGraph.objects.filter(active_slot__gt=after)
    if upto is not None:
        graphs = graphs.filter(active_slot__lte=upto)
    return list(
        graphs.alias(acting_agent=Subquery(acting_agent))
        .filter(acting_agent__in=agent_ids)
        .filter(~Exists(running))
        .annotate(head=Subquery(head))
        .filter(head__isnull=False)
        .order_by("active_slot")
        .values_list("active_slot", "head")[:limit]
    )


def candidates_in_turns(*, node_ids: list[int], limit: int) -> list[Candidate]:
    """The values of at most `limit` of `node_ids` (one per conversation, from `conversation_heads`),
    agent by agent in turns: each agent's oldest, then each agent's second oldest, ..., oldest
    `not_before` first within a turn, so `limit` never fills with one agent's backlog while another
    agent waits. One query; no model object is built."""
    if not node_ids:
        return []
    rows = (
        TaskNode.objects.filter(pk__in=node_ids)
        .order_by("not_before", "id")
        .values_list("id", "agent_id", "conversation_id", "kind")
    )
    taken: dict[int, int] = {}
    in_turns = []
    for position, row in enumerate(rows):
        turn = taken.get(row[1], 0)
        taken[row[1]] = turn + 1
        in_turns.append((turn, position, Candidate(*row)))
    in_turns.sort(key=lambda entry: entry[:2])
    return [candidate for _, _, candidate in in_turns[:limit]]


def eligible_nodes(*, agent_ids: Iterable[int], at: dt.datetime, limit: int = 1000) -> list[Candidate]:
    """The nodes the tick may start now, one per conversation (`conversation_heads` from the first
    conversation on), at most `limit`, in turns (`candidates_in_turns`). Two queries."""
    heads = conversation_heads(agent_ids=agent_ids, at=at, limit=limit)
    return candidates_in_turns(node_ids=[node_id for _, node_id in heads], limit=limit)


def node_next_due_at(*, agent_ids: Iterable[int], after: dt.datetime) -> dt.datetime | None:
    """The earliest `not_before` after `after` of a pending node of `agent_ids`: when the next read
    delay, typing pause or retry of those agents ends. One query on `tasknode_eligible_idx`."""
    agent_ids = list(agent_ids)
    if not agent_ids:
        return None
    return (
        TaskNode.objects.filter(status=NodeStatus.PENDING, not_before__gt=after, agent_id__in=agent_ids)
        .order_by("not_before")
        .values_list("not_before", flat=True)
        .first()
    )


def conversation_last_message_id(*, conversation: Conversation) -> int | None:
    return Message.objects.filter(conversation=conversation).aggregate(m=Max("message_id"))["m"]


def conversations_last_message_ids(*, conversation_ids: Iterable[int]) -> dict[int, int]:
    """`conversation_last_message_id` of many conversations in one query (those without messages are
    left out)."""
    ids = list(conversation_ids)
    if not ids:
        return {}
    return dict(
        Message.objects.filter(conversation_id__in=ids)
        .values("conversation_id")
        .annotate(m=Max("message_id"))
        .values_list("conversation_id", "m")
    )


def conversation_last_agent_message_id(*, conversation: Conversation) -> int | None:
    return Message.objects.filter(conversation=conversation, is_agent=True, deleted=False).aggregate(
        m=Max("message_id")
    )["m"]


def is_reply_to_agent(*, conversation: Conversation, reply_to_id: int | None) -> bool:
    if reply_to_id is None:
        return False
    return Message.objects.filter(conversation=conversation, message_id=reply_to_id, is_agent=True).exists()


def conversations_with_messages(*, agent_id: int) -> list[Conversation]:
    """The agent's conversations that the mirror has messages for (the reconciler fills their gaps)."""
    return list(
        Conversation.objects.filter(agent_id=agent_id).filter(
            Q(Exists(Message.objects.filter(conversation=OuterRef("pk"))))
        )
    )


def first_partner_message_id(*, conversation: Conversation) -> int | None:
    """The partner's first visible message in a DM (None in groups, or before they wrote).

    With Reset Context On First Message, the agent's history of a DM starts here.
    """
    if conversation.kind != Conversation.Kind.DM:
        return None
    rows = Message.objects.filter(conversation=conversation, deleted=False, is_agent=False, is_service=False)
    return rows.order_by("message_id").values_list("message_id", flat=True).first()
