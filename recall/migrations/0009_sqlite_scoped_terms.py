"""SQLite: each entry's `terms` holds its words prefixed with its scope (`recall/fulltext.py`,
`sqlite_terms`), and the FTS5 table's scope column indexes them beside the scope words, so that a
conversation's search matches only its own chat's and the agent's global rows in the index instead
of reading each word's list over the whole table.

Forward: the triggers and the FTS table go, every entry's `terms` is written from its text
(2,000 rows at a time, as migration 0008 wrote MariaDB's, without triggers), then the table and its
triggers are made again (the update trigger also fires when `terms` changes) and filled. Backward:
the same with empty `terms` and the triggers of migrations 0002 and 0006. MariaDB/MySQL, whose
`terms` migration 0008 wrote, has nothing to do. A later migration that makes SQLite rebuild
`recall_recallentry` must make these triggers again (`SQLITE_CREATE`).
"""

import importlib

from django.db import migrations, models

from recall.fulltext import sqlite_terms
from recall.stemming import terms

first = importlib.import_module("recall.migrations.0002_fulltext")
narrowed = importlib.import_module("recall.migrations.0006_vector_update_trigger")
scoped_words = importlib.import_module("recall.migrations.0008_fulltext_scoped_terms")

FTS, TABLE = first.FTS, first.TABLE


def _scope(row: str) -> str:
    """The scope column of an entry (`row` is `new`, `old` or the table): migration 0002's scope
    words, then the entry's scoped words."""
    return f"{first._scope(row)} || ' ' || {row}.terms"


SQLITE_CREATE = first.sqlite_create(_scope, " OF text, terms, agent_id, peer_id, topic_id")


def _scoped(row) -> str:
    _, agent_id, peer_id, topic_id, text = row
    return sqlite_terms(terms(text).split(), agent_id=agent_id, peer_id=peer_id, topic_id=topic_id)


def forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in first.SQLITE_DROP:
        schema_editor.execute(statement)
    scoped_words.rewrite(schema_editor, _scoped, vendor="sqlite", column="text")
    for statement in SQLITE_CREATE:
        schema_editor.execute(statement)


def backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in first.SQLITE_DROP:
        schema_editor.execute(statement)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET terms = ''")  # noqa: S608
    for statement in first.SQLITE_CREATE:
        schema_editor.execute(statement)
    for statement in narrowed._trigger(" OF text, agent_id, peer_id, topic_id"):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("recall", "0008_fulltext_scoped_terms")]

    operations = [
        migrations.RunPython(forward, backward),
        migrations.AlterField(
            model_name="recallentry",
            name="terms",
            field=models.TextField(
                blank=True,
                help_text="The text's stemmed words for the full-text index (recall.fulltext): plain "
                "and prefixed with the entry's scope on MariaDB/MySQL, prefixed on SQLite",
            ),
        ),
    ]
