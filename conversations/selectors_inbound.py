"""Reads every inbound message runs (ingest, triggers, claim, replan, planning), in plain SQL.

Each read here is asked once or more per message on the inbound path; built through the ORM it
costs about 0.2 ms of CPU (building and compiling the queryset), through the cursor about 0.015 ms
(measured as cindy_site/rows.py says). They return model
instances made by `Model.from_db` (cindy_site/rows.py) or plain values. Everything else reads
through the ORM (conversations/selectors.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from agents.models import Agent
from cindy_site import rows
from conversations.models import Conversation, Message, NodeStatus, TaskGraph, TaskNode


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
