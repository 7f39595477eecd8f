"""The vector scan of a turn's search reads its covering index alone, on both databases: the
history's bound (kind, message id) and the kinds are in it (migration 0011)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from recall.models import RecallEntry
from recall.selectors import recall_search
from recall.similar import VECTOR_SCAN_INDEX
from recall.tests.conftest import ALICE

pytestmark = pytest.mark.django_db(transaction=True)


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            return " | ".join(str(row[-1]) for row in cursor.fetchall())
        cursor.execute(f"EXPLAIN {sql}")
        names = [c[0] for c in cursor.description]
        return " | ".join(
            f"{row[names.index('key')]}: {row[names.index('Extra')]}" for row in cursor.fetchall()
        )


def test_a_turn_s_vector_scan_reads_its_covering_index_alone(wendy, say):
    say(ALICE, "the lighthouse keeper's wedding is on Saturday")
    for number in range(2, 41):
        chat, _ = say(ALICE, f"message {number} about the ferry timetable")
    asked = {"agent_id": wendy.pk, "query": "when is the wedding", "conversation": chat, "mode": "vectors"}

    with CaptureQueriesContext(connection) as queries:
        hits = recall_search(**asked, messages_before=30, kinds=["message", "note"])
    scans = [q["sql"] for q in queries.captured_queries if VECTOR_SCAN_INDEX in q["sql"]]

    assert len(scans) == 2  # the chat's own entries, and the agent's global ones
    for sql in scans:
        plan = _plan(sql)
        if connection.vendor == "sqlite":
            assert f"COVERING INDEX {VECTOR_SCAN_INDEX}" in plan, plan
        else:
            key, extra = plan.split(": ", 1)
            # "Using index" alone: the rows are not read ("Using index condition" would read them).
            assert key == VECTOR_SCAN_INDEX and "Using index" in extra.split("; "), plan
    # The bound held: only messages below id 30, and the wedding first.
    assert hits[0].text == "the lighthouse keeper's wedding is on Saturday"
    assert all(h.message_id < 30 for h in hits)
    assert RecallEntry.objects.filter(vector__isnull=True, message_id__lt=30).count() == 0
