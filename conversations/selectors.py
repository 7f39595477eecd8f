"""Reads for the engine and the dashboard: what the tick may run, and a conversation's history."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Exists, Max, OuterRef, Q

from agents.models import Agent
from cindy_site import rows
from cindy_site.bulk import earliest, placeholders
from conversations.models import Conversation, Message, NodeStatus, TaskGraph, TaskNode

DependsOn = TaskNode.depends_on.through


def pending_nodes_due(*, agent_ids: Iterable[int], at: dt.datetime) -> bool:
    """Whether any pending node of these agents has reached its `not_before`: the cheap first test of
    an idle tick (`tasknode_eligible_idx`), before the full eligibility scan. Plain SQL: every tick
    asks it, for every agent the gateway holds, and building the ORM query cost more than running it."""
    agent_ids = list(agent_ids)
    if not agent_ids:
        return False
    table = connection.ops.quote_name(TaskNode._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {table} WHERE status = %s AND not_before <= %s AND agent_id IN ({placeholders(len(agent_ids))}) LIMIT 1",  # noqa: S608
            [NodeStatus.PENDING.value, connection.ops.adapt_datetimefield_value(at), *agent_ids],
        )
        return cursor.fetchone() is not None


class Candidate(NamedTuple):
    """A node the tick may start, as plain values (the tick reads up to `SCAN_LIMIT` per pass)."""

    id: int
    agent_id: int
    conversation_id: int
    kind: str


class Head(NamedTuple):
    """A conversation's next node (`conversation_heads`), with its `not_before` as stored, in text
    (UTC, `YYYY-MM-DD HH:MM:SS[.ffffff]`), which sorts as the times do: only to order heads, and
    cheaper to read than a datetime (800 per pass)."""

    candidate: Candidate
    due: str


def _heads_sql(*, agent_count: int, upto: bool) -> str:
    """The SQL of `conversation_heads`, whose parameters `_heads_params` lists in order."""
    q = connection.ops.quote_name
    node, graph = q(TaskNode._meta.db_table), q(TaskGraph._meta.db_table)
    conversation, agent = q(Conversation._meta.db_table), q(Agent._meta.db_table)
    depends = q(DependsOn._meta.db_table)
    agents = placeholders(agent_count)
    text = connection.ops.cast_char_field_without_max_length
    in_range = "g.active_slot > %s" + (" AND g.active_slot <= %s" if upto else "")
    # The head is joined on its id: one query instead of the heads and then their values by id, a
    # primary-key read per conversation, and a conversation without a head drops out of the join.
    # SQLite runs the head subquery once per conversation; MariaDB twice (for the key, then as the
    # join condition), as often as when the ORM filters on it beside selecting it. The acting agent
    # is a scalar subquery rather than a join or EXISTS, which MariaDB would turn into a join driven
    # by the agents' conversations.
    return f"""
        SELECT n.id, n.agent_id, n.conversation_id, n.kind, CAST(n.not_before AS {text})
        FROM {graph} g
        INNER JOIN {node} n ON n.id = (
            SELECT v.id FROM {node} v
            WHERE v.conversation_id = g.active_slot AND v.status = %s AND v.not_before <= %s
              AND NOT EXISTS (
                  SELECT 1 FROM {depends} d INNER JOIN {node} u ON u.id = d.to_tasknode_id
                  WHERE d.from_tasknode_id = v.id AND u.status <> %s
              )
            ORDER BY v.not_before, v.id
            LIMIT 1
        )
        WHERE {in_range}
          AND (
              SELECT c.agent_id FROM {conversation} c INNER JOIN {agent} a ON a.id = c.agent_id
              WHERE c.id = g.active_slot AND c.gagged = %s
                AND a.disabled = %s AND a.gagged = %s AND a.stopped = %s
          ) IN ({agents})
          AND NOT EXISTS (
              SELECT 1 FROM {node} r WHERE r.conversation_id = g.active_slot AND r.status = %s
          )
        ORDER BY g.active_slot
        LIMIT %s
    """


def _heads_params(
    *, agent_ids: list[int], at: dt.datetime, limit: int, after: int, upto: int | None
) -> list[Any]:
    in_range = [after] if upto is None else [after, upto]
    return [
        NodeStatus.PENDING.value,
        connection.ops.adapt_datetimefield_value(at),
        NodeStatus.DONE.value,
        *in_range,
        False,
        False,
        False,
        False,
        *agent_ids,
        NodeStatus.RUNNING.value,
        limit,
    ]


def conversation_heads(
    *, agent_ids: Iterable[int], at: dt.datetime, limit: int, after: int = 0, upto: int | None = None
) -> list[Head]:
    """The node each active conversation may start now, with its values, at most `limit`
    conversations in conversation id order from just after `after` (to `upto`, inclusive, when
    given). One query; no model object is built.

    A conversation's node is its oldest eligible one: pending; `not_before` reached; every dependency
    done; the agent neither disabled, gagged nor stopped; the conversation not gagged; and no node of
    the conversation running (one running node per conversation). The query walks the active graphs
    in the unique index of `active_slot` (an active graph, and only it, carries its conversation's id
    there; pending and running nodes belong to it, since closing a graph cancels them) and stops at
    `limit` conversations with a node to start. Each conversation costs a few index probes
    (`tasknode_queue_idx`: conversation, status, not_before) and one primary-key read of its node, so
    its backlog does not matter: a conversation with 10,000 queued nodes costs what one with a single
    node costs, and finished graphs or idle conversations cost nothing.

    Written in SQL because the head is joined on the id its subquery finds, which the ORM cannot
    express (see `_heads_sql`).
    """
    agent_ids = list(agent_ids)
    if not agent_ids or limit <= 0:
        return []
    sql = _heads_sql(agent_count=len(agent_ids), upto=upto is not None)
    params = _heads_params(agent_ids=agent_ids, at=at, limit=limit, after=after, upto=upto)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Head(Candidate(*row[:4]), row[4]) for row in cursor.fetchall()]


def candidates_in_turns(*, heads: list[Head], limit: int) -> list[Candidate]:
    """At most `limit` of `heads` (one per conversation, from `conversation_heads`), agent by agent
    in turns: each agent's oldest, then each agent's second oldest, ..., oldest `not_before` (then
    id) first within a turn, so `limit` never fills with one agent's backlog while another agent
    waits. No query."""
    oldest_first = sorted(heads, key=lambda head: (head.due, head.candidate.id))
    taken: dict[int, int] = {}
    in_turns = []
    for position, (candidate, _) in enumerate(oldest_first):
        turn = taken.get(candidate.agent_id, 0)
        taken[candidate.agent_id] = turn + 1
        in_turns.append((turn, position, candidate))
    in_turns.sort(key=lambda entry: entry[:2])
    return [candidate for _, _, candidate in in_turns[:limit]]


def eligible_nodes(*, agent_ids: Iterable[int], at: dt.datetime, limit: int = 1000) -> list[Candidate]:
    """The nodes the tick may start now, one per conversation (`conversation_heads` from the first
    conversation on), at most `limit`, in turns (`candidates_in_turns`). One query."""
    return candidates_in_turns(heads=conversation_heads(agent_ids=agent_ids, at=at, limit=limit), limit=limit)


def node_next_due_at(*, agent_ids: Iterable[int], after: dt.datetime) -> dt.datetime | None:
    """The earliest `not_before` after `after` of a pending node of `agent_ids`: when the next read
    delay, typing pause or retry of those agents ends. One query on `tasknode_eligible_idx`."""
    return earliest(
        TaskNode,
        "not_before",
        agent_ids=list(agent_ids),
        where="status = %s AND not_before > %s",
        params=(NodeStatus.PENDING.value, connection.ops.adapt_datetimefield_value(after)),
    )


def conversation_last_message_id(*, conversation: Conversation) -> int | None:
    return Message.objects.filter(conversation=conversation).aggregate(m=Max("message_id"))["m"]


def conversation_newest_message_id(*, conversation_id: int) -> int | None:
    """The conversation's newest message id, through the (conversation, message_id) unique index.

    Plain SQL: asked for a turn's chat before every planning task (the dispatch's sync); the ORM
    query cost about 0.2 ms of CPU against 0.015 ms through the cursor (measured in cindy_site/rows.py)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT message_id FROM {rows.table(Message)} WHERE conversation_id = %s "  # noqa: S608
            "ORDER BY message_id DESC LIMIT 1",
            [conversation_id],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def conversations_last_message_ids(*, conversation_ids: Iterable[int]) -> dict[int, int]:
    """`conversation_last_message_id` of many conversations in one query (those without messages are
    left out)."""
    ids = list(conversation_ids)
    if not ids:
        return {}
    if len(ids) == 1:  # a turn's chat, before every planning task
        newest = conversation_newest_message_id(conversation_id=int(ids[0]))
        return {ids[0]: newest} if newest is not None else {}
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


# --- The inbound path's reads, in plain SQL -----------------------------------------------------------
# Each is asked once or more per message on the inbound path (ingest, triggers, claim, replan,
# planning); through the ORM it costs about ten times the CPU (measured as cindy_site/rows.py says).
# They return model instances made by `Model.from_db` (cindy_site/rows.py) or plain values.


def _one(sql: str, params: list[Any]) -> tuple | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def conversation_by_key(*, agent_id: int, peer_id: int, topic_id: int) -> Conversation | None:
    """The agent's conversation with `peer_id` in `topic_id` (0: no topic); the key is unique.
    Per ingested message."""
    row = _one(
        f"SELECT {rows.columns(Conversation, 'c')} FROM {rows.table(Conversation)} c "  # noqa: S608
        "WHERE c.agent_id = %s AND c.peer_id = %s AND c.topic_id = %s LIMIT 1",
        [agent_id, peer_id, topic_id],
    )
    return rows.from_row(Conversation, row) if row else None


def message_by_key(*, conversation_id: int, message_id: int) -> Message | None:
    """The mirrored message `message_id` of the conversation (unique). Per ingested message."""
    row = _one(
        f"SELECT {rows.columns(Message, 'm')} FROM {rows.table(Message)} m "  # noqa: S608
        "WHERE m.conversation_id = %s AND m.message_id = %s LIMIT 1",
        [conversation_id, message_id],
    )
    return rows.from_row(Message, row) if row else None


def message_recorded_before(*, conversation_id: int, message_id: int) -> bool:
    """Whether any message older than `message_id` is recorded in the conversation (the agent's,
    service messages and deleted ones count). Per DM message (engine/triggers.py)."""
    return (
        _one(
            f"SELECT 1 FROM {rows.table(Message)} WHERE conversation_id = %s AND message_id < %s LIMIT 1",  # noqa: S608
            [conversation_id, message_id],
        )
        is not None
    )


def message_reactions(*, conversation_id: int, message_id: int) -> list | None:
    """The reactions of a mirrored message (None without the message): the planning turn's target.
    Per planned turn."""
    row = _one(
        f"SELECT reactions FROM {rows.table(Message)} WHERE conversation_id = %s AND message_id = %s LIMIT 1",  # noqa: S608
        [conversation_id, message_id],
    )
    if row is None:
        return None
    return Message._meta.get_field("reactions").from_db_value(row[0], None, connection)


def node_to_plan(*, node_id: int) -> TaskNode | None:
    """The node a planning task plans, with its agent, its graph and its conversation with that
    conversation's agent (what the brakes and the turn read). Per planning task."""
    row = _one(
        f"SELECT {rows.columns(TaskNode, 'n')}, {rows.columns(Agent, 'a')}, {rows.columns(TaskGraph, 'g')}, "  # noqa: S608
        f"{rows.columns(Conversation, 'c')}, {rows.columns(Agent, 'ca')} "
        f"FROM {rows.table(TaskNode)} n "
        f"JOIN {rows.table(Agent)} a ON a.id = n.agent_id "
        f"JOIN {rows.table(TaskGraph)} g ON g.id = n.graph_id "
        f"JOIN {rows.table(Conversation)} c ON c.id = n.conversation_id "
        f"JOIN {rows.table(Agent)} ca ON ca.id = c.agent_id "
        "WHERE n.id = %s",
        [node_id],
    )
    if row is None:
        return None
    node, agent, graph, conversation, conversation_agent = rows.from_joined_row(
        row, TaskNode, Agent, TaskGraph, Conversation, Agent
    )
    conversation.agent = conversation_agent
    node.agent, node.graph, node.conversation = agent, graph, conversation
    return node


def node_claimed(*, node_id: int, owner: str) -> TaskNode | None:
    """The node if it is running under the claim `owner`, with its conversation, graph and agent:
    read right after a single node's claim. The status is tested on the row found by primary key
    (`LOWER(status)`, as `conversations.services.nodes._status_is` explains). Per claimed message."""
    row = _one(
        f"SELECT {rows.columns(TaskNode, 'n')}, {rows.columns(Conversation, 'c')}, "  # noqa: S608
        f"{rows.columns(TaskGraph, 'g')}, {rows.columns(Agent, 'a')} "
        f"FROM {rows.table(TaskNode)} n "
        f"JOIN {rows.table(Conversation)} c ON c.id = n.conversation_id "
        f"JOIN {rows.table(TaskGraph)} g ON g.id = n.graph_id "
        f"JOIN {rows.table(Agent)} a ON a.id = n.agent_id "
        "WHERE n.id = %s AND LOWER(n.status) = %s AND n.lease_owner = %s",
        [node_id, NodeStatus.RUNNING.value, owner],
    )
    if row is None:
        return None
    node, conversation, graph, agent = rows.from_joined_row(row, TaskNode, Conversation, TaskGraph, Agent)
    node.conversation, node.graph, node.agent = conversation, graph, agent
    return node


def graph_active_locked(*, conversation_id: int) -> TaskGraph | None:
    """The conversation's active graph with its conversation, row-locked where the database locks
    rows (`SELECT ... FOR UPDATE`; SQLite locks the whole database on write). Per replan; call it
    inside a transaction."""
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    row = _one(
        f"SELECT {rows.columns(TaskGraph, 'g')}, {rows.columns(Conversation, 'c')} "  # noqa: S608
        f"FROM {rows.table(TaskGraph)} g JOIN {rows.table(Conversation)} c ON c.id = g.conversation_id "
        f"WHERE g.active_slot = %s LIMIT 1{lock}",
        [conversation_id],
    )
    if row is None:
        return None
    graph, conversation = rows.from_joined_row(row, TaskGraph, Conversation)
    graph.conversation = conversation
    return graph


def message_window_rows(
    *, conversation_id: int, since_message_id: int | None, count: int, fields: Sequence[str]
) -> list[tuple]:
    """At most `count` visible (not deleted) messages of the conversation from `since_message_id` on
    (None: from the first), newest first: the columns of `fields` as the database driver returns
    them (date-times and JSON not converted yet, so a row is hashable and can key a cache;
    `cindy_site.rows.convert(Message, row, names=fields)` converts one). Per planned turn: the
    prompt's history window (llm/conversation.py), read before every LLM request."""
    q = connection.ops.quote_name
    columns = ", ".join(q(Message._meta.get_field(name).column) for name in fields)
    since = "" if since_message_id is None else " AND message_id >= %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {rows.table(Message)} WHERE conversation_id = %s AND deleted = %s"  # noqa: S608
            f"{since} ORDER BY message_id DESC LIMIT %s",
            [conversation_id, False, *([] if since_message_id is None else [since_message_id]), int(count)],
        )
        return [tuple(row) for row in cursor.fetchall()]
