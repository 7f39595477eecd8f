"""SQLite: the full-text trigger on updates fires only when what the index holds changes.

Vectors are filled after their entries are written (recall/vectors.py): an UPDATE of `vector` alone
rewrote the entry's FTS5 row through the `AFTER UPDATE` trigger of migration 0002 (a delete and an
insert of the same words). The trigger now names the columns the FTS row is made of (`text`, and the
agent, peer and topic of its scope words); an upsert writes them all, so it still fires there.
"""

import importlib

from django.db import migrations

sql = importlib.import_module("recall.migrations.0002_fulltext")

TRIGGER = f"{sql.TABLE}_au"


def _trigger(columns: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {TRIGGER}",
        f"CREATE TRIGGER {TRIGGER} AFTER UPDATE{columns} ON {sql.TABLE} BEGIN "
        f"INSERT INTO {sql.FTS}({sql.FTS}, rowid, text, scope) VALUES ('delete', old.id, old.text, "
        f"{sql._scope('old')}); "
        f"INSERT INTO {sql.FTS}(rowid, text, scope) VALUES (new.id, new.text, {sql._scope('new')}); END",
    ]


def narrow(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in _trigger(" OF text, agent_id, peer_id, topic_id"):
            schema_editor.execute(statement)


def widen(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in _trigger(""):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("recall", "0005_vector_scan_index")]

    operations = [migrations.RunPython(narrow, widen)]
