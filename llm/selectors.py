"""Reads of LLM accounting rows that every planned turn runs before its request, in plain SQL.

Built through the ORM such a read costs about 0.2 ms of CPU (building and compiling the queryset),
through the cursor about 0.02 ms (measured as cindy_site/rows.py
says); each is asked once per planning call.
"""

from __future__ import annotations

from django.db import connection

from cindy_site import rows
from llm.models import LLMCall, ModelPrice


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
