"""The full-text index is made by a migration per database, and undone by migrating back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from recall.selectors import FTS_TABLE

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(target: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def _fulltext_present() -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE name = %s OR (type = 'trigger' AND tbl_name = %s)",
                [FTS_TABLE, "recall_recallentry"],
            )
            return {row[0] for row in cursor.fetchall()} == {
                FTS_TABLE,
                "recall_recallentry_ai",
                "recall_recallentry_ad",
                "recall_recallentry_au",
            }
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() "
            "AND table_name = 'recall_recallentry' AND index_type = 'FULLTEXT'"
        )
        return cursor.fetchone()[0] == 1


def test_the_fulltext_index_is_dropped_and_made_again_with_its_migration():
    assert _fulltext_present()
    try:
        _migrate([("recall", "0001_initial")])
        assert not _fulltext_present()
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert _fulltext_present()


def test_scoped_words_are_written_for_existing_entries_and_dropped_going_back(wendy, say):
    from recall.fulltext import entry_terms, sqlite_terms
    from recall.models import RecallEntry
    from recall.selectors import recall_search
    from recall.stemming import terms
    from recall.tests.conftest import ALICE

    chat, _ = say(ALICE, "the lighthouse keeper's weddings")
    written = entry_terms if connection.vendor == "mysql" else sqlite_terms
    expected = written(
        terms("the lighthouse keeper's weddings").split(), agent_id=wendy.pk, peer_id=ALICE, topic_id=0
    )
    assert expected.split()[-1] == (
        f"c{wendy.pk}p{ALICE}t0" + ("_" if connection.vendor == "mysql" else "x") + "wed"
    )
    assert RecallEntry.objects.get().terms == expected
    try:
        _migrate([("recall", "0006_vector_update_trigger")])
        before = RecallEntry.objects.get().terms
        assert before == ("the lighthous keeper s wed" if connection.vendor == "mysql" else "")
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert RecallEntry.objects.get().terms == expected
    assert len(recall_search(agent_id=wendy.pk, query="wedding", conversation=chat, mode="fulltext")) == 1


def _segments() -> int:
    """SQLite: how many segments the FTS5 index is in (the structure record: a 4-byte cookie, then
    varints for the levels and the segments)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT block FROM {FTS_TABLE}_data WHERE id = 10")
        (structure,) = cursor.fetchone()
    values, value = [], 0
    for byte in structure[4:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
            if len(values) == 2:
                return values[1]
    raise AssertionError(f"an FTS5 structure record too short to read: {structure!r}")


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the FTS5 index is SQLite's")
def test_the_fulltext_index_is_merged_into_one_segment(wendy, say):
    """Written a transaction at a time with merging off, the index is in as many segments as it had
    writes; migration 0010 merges them (and a search finds the same)."""
    from recall.selectors import recall_search
    from recall.tests.conftest import ALICE

    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('automerge', 0)")
    try:
        for word in ("lighthouse", "harbour", "ferry", "lantern", "tide"):
            chat, _ = say(ALICE, f"the {word} at dawn")
        assert _segments() >= 5
        _migrate([("recall", "0009_sqlite_scoped_terms")])
        _migrate([("recall", "0010_fulltext_merged")])
        assert _segments() == 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('automerge', 4)")
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert [
        h.text for h in recall_search(agent_id=wendy.pk, query="ferry", conversation=chat, mode="fulltext")
    ] == ["the ferry at dawn"]
