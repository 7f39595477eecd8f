"""The full-text index over recall entries, made in each database's own way (recall/fulltext.py
searches it).

- SQLite: an FTS5 table over `recall_recallentry.text` (external content, Porter stemming,
  accents folded), kept in step by three triggers on the entry table. A later migration that
  makes SQLite rebuild `recall_recallentry` (most column changes do) drops the triggers with the
  old table, and must create them again (and `INSERT INTO recall_recallentry_fts(recall_recallentry_fts)
  VALUES('rebuild')`).
- MariaDB/MySQL: an InnoDB FULLTEXT index on `terms` (the text's stemmed words, `recall.stemming`),
  searched in natural language mode.
"""

from django.db import migrations

FTS = "recall_recallentry_fts"
TABLE = "recall_recallentry"

SQLITE_CREATE = [
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(text, content='{TABLE}', content_rowid='id', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER {TABLE}_ai AFTER INSERT ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}(rowid, text) VALUES (new.id, new.text); END",
    f"CREATE TRIGGER {TABLE}_ad AFTER DELETE ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.id, old.text); END",
    f"CREATE TRIGGER {TABLE}_au AFTER UPDATE OF text ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.id, old.text); "
    f"INSERT INTO {FTS}(rowid, text) VALUES (new.id, new.text); END",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]
SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {TABLE}_ai",
    f"DROP TRIGGER IF EXISTS {TABLE}_ad",
    f"DROP TRIGGER IF EXISTS {TABLE}_au",
    f"DROP TABLE IF EXISTS {FTS}",
]
MYSQL_CREATE = [f"CREATE FULLTEXT INDEX recall_entry_terms_ft ON {TABLE} (terms)"]
MYSQL_DROP = [f"DROP INDEX recall_entry_terms_ft ON {TABLE}"]


def _run(schema_editor, statements: dict[str, list[str]]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in statements:
        raise RuntimeError(
            f"the recall index supports SQLite and MariaDB/MySQL, not {vendor}: set DATABASE_URL to one of them"
        )
    for statement in statements[vendor]:
        schema_editor.execute(statement)


def create(apps, schema_editor) -> None:
    _run(schema_editor, {"sqlite": SQLITE_CREATE, "mysql": MYSQL_CREATE})


def drop(apps, schema_editor) -> None:
    _run(schema_editor, {"sqlite": SQLITE_DROP, "mysql": MYSQL_DROP})


class Migration(migrations.Migration):
    # InnoDB cannot add a FULLTEXT index inside a transaction that has written; SQLite needs none.
    atomic = False

    dependencies = [("recall", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
