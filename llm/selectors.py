"""Reads of LLM accounting rows that every planned turn runs before its request, in plain SQL.

Built through the ORM such a read costs about 0.2 to 0.8 ms of CPU (building and compiling the queryset),
through the cursor about 0.02 ms (measured as cindy_site/rows.py
says); each is asked once per planning call.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from django.db import connection

from cindy_site import rows
from conversations.models import TaskGraph
from llm.models import LLMCall, ModelPrice, RouteBreaker


def finished_call(*, node_id: int, fingerprint: str) -> LLMCall | None:
    """The newest finished call (status ok, a non-empty reply) of this node with this fingerprint:
    asked before every planning call (`llm.calls.finished_reply`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(LLMCall, 'l')} FROM {rows.table(LLMCall)} l "  # noqa: S608
            "WHERE l.node_id = %s AND l.fingerprint = %s AND l.status = %s AND l.reply <> '' "
            "ORDER BY l.id DESC LIMIT 1",
            [node_id, fingerprint, LLMCall.Status.OK.value],
        )
        row = cursor.fetchone()
    return rows.from_row(LLMCall, row) if row else None


def prices_of_provider(*, provider: str) -> list[ModelPrice]:
    """The provider's price rows, oldest first: read by every call (`llm.usage.price_for`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(ModelPrice, 'p')} FROM {rows.table(ModelPrice)} p "  # noqa: S608
            "WHERE p.provider = %s ORDER BY p.id",
            [provider],
        )
        return [rows.from_row(ModelPrice, row) for row in cursor.fetchall()]


def route_breakers(*, routes: Sequence[tuple[str, str]]) -> list[RouteBreaker]:
    """The breaker rows of these (provider, model) routes: read before every planning call
    (`llm.breakers.breakers_of`). Measured: the ORM query (an OR of `Q`s) 0.63 ms CPU, this 0.03 ms."""
    if not routes:
        return []
    match = " OR ".join(["(b.provider = %s AND b.model = %s)"] * len(routes))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(RouteBreaker, 'b')} FROM {rows.table(RouteBreaker)} b WHERE {match}",  # noqa: S608
            [value for route in routes for value in route],
        )
        return [rows.from_row(RouteBreaker, row) for row in cursor.fetchall()]


def graph_contexts_since(
    *, conversation_id: int, graph_id: int, at: dt.datetime, cutoff: dt.datetime, limit: int
) -> list[dict[str, Any] | None]:
    """The contexts of the conversation's other graphs created by `at` and open or finished since
    `cutoff`, newest first, at most `limit`: read by every planning turn for the pages kept from
    earlier turns (`llm.retrieved_kept.pages_kept`). Measured: the ORM query 0.80 ms CPU, this 0.04 ms."""
    field = TaskGraph._meta.get_field("context")
    stamp, since = (connection.ops.adapt_datetimefield_value(value) for value in (at, cutoff))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT g.{rows.quote(field.column)} FROM {rows.table(TaskGraph)} g "  # noqa: S608
            "WHERE g.conversation_id = %s AND g.created <= %s AND (g.finished IS NULL OR g.finished >= %s) "
            "AND g.id <> %s ORDER BY g.created DESC LIMIT %s",
            [conversation_id, stamp, since, graph_id, limit],
        )
        return [rows.convert(TaskGraph, row, names=("context",))[0] for row in cursor.fetchall()]
