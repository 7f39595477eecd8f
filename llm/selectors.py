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
from llm.models import ExplicitCache, LLMCall, LLMEndpoint, ModelPrice, RouteBreaker, SiteParameter


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


def prices_matching(*, provider: str, model: str) -> list[ModelPrice]:
    """The provider's price rows whose `model_prefix` the database finds at the start of `model`,
    the longest prefix first (then the oldest): read by every call (`llm.usage.price_for`, which
    takes the first whose prefix `model` really starts with: MariaDB's comparison ignores case).
    Reading every price row of the provider converted about ten rows of seven decimals each, per
    call, for the one it used."""
    length = "CHAR_LENGTH" if connection.vendor == "mysql" else "LENGTH"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(ModelPrice, 'p')} FROM {rows.table(ModelPrice)} p "  # noqa: S608
            f"WHERE p.provider = %s AND SUBSTR(%s, 1, {length}(p.model_prefix)) = p.model_prefix "
            f"ORDER BY {length}(p.model_prefix) DESC, p.id",
            [provider, model],
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


def explicit_caches_of(*, conversation_id: int, model: str) -> list[ExplicitCache]:
    """The conversation's explicit caches of `model`, expired ones included, the longest prefix first:
    read before every Gemini planning call (`llm.explicit_cache.cache_for_request`), which finds none
    in most chats. It replaces the ORM's delete of the expired rows and read of the live ones, two
    compiled statements (bench/bench_inbound_profile.py found them in every turn)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(ExplicitCache, 'c')} FROM {rows.table(ExplicitCache)} c "  # noqa: S608
            "WHERE c.conversation_id = %s AND c.model = %s "
            "ORDER BY c.prefix_turns DESC, c.created DESC, c.id DESC",
            [conversation_id, model],
        )
        return [rows.from_row(ExplicitCache, row) for row in cursor.fetchall()]


def planning_calls_since(*, conversation_id: int, since: dt.datetime) -> tuple[int, int, int]:
    """(planning calls of the conversation created at `since` or later, the input tokens and the
    cached tokens of those among them that succeeded without an explicit cache), in one statement:
    read before every Gemini planning call that uses no explicit cache
    (`llm.explicit_cache.conversation_misses_implicit_cache`); the ORM's count and aggregate were two
    compiled statements."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), "  # noqa: S608
            "SUM(CASE WHEN l.status = %s AND NOT l.explicit_cache THEN l.input_tokens ELSE 0 END), "
            "SUM(CASE WHEN l.status = %s AND NOT l.explicit_cache THEN l.cached_tokens ELSE 0 END) "
            f"FROM {rows.table(LLMCall)} l "
            "WHERE l.conversation_id = %s AND l.purpose = %s AND l.created >= %s",
            [
                LLMCall.Status.OK.value,
                LLMCall.Status.OK.value,
                conversation_id,
                LLMCall.Purpose.PLAN.value,
                connection.ops.adapt_datetimefield_value(since),
            ],
        )
        turns, tokens, cached = cursor.fetchone()
    return int(turns or 0), int(tokens or 0), int(cached or 0)


def enabled_endpoints() -> list[tuple[str, str, str, str]]:
    """(name, base URL, API key, structured) of the enabled `LLMEndpoint` rows, by name: read before
    every task a worker runs and at every full gateway pass (`llm.endpoint_store.endpoints_refresh`).
    Measured (one row): the ORM query (`filter(enabled=True).order_by("name")`, model instances)
    0.16 ms CPU, this 0.014 ms."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.name, e.base_url, e.api_key, e.structured "  # noqa: S608
            f"FROM {rows.table(LLMEndpoint)} e WHERE e.enabled = %s ORDER BY e.name",
            [True],
        )
        return [tuple(row) for row in cursor.fetchall()]


def stored_parameters() -> dict[str, str]:
    """The stored overrides of the global parameters, name → value: read with `enabled_endpoints`
    (`llm.parameter_store.parameters_refresh`). Measured (no row): the ORM query (`values_list`)
    0.09 ms CPU, this 0.009 ms."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT p.name, p.value FROM {rows.table(SiteParameter)} p ORDER BY p.name")  # noqa: S608
        return dict(cursor.fetchall())
