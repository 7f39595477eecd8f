"""The full-text index over recall entries, made in each database's own way (recall/fulltext.py
searches it).

- SQLite: a contentless FTS5 table of each entry's text (Porter stemming, accents folded) and its
  scope words, kept in step by three triggers on the entry table (a contentless table forgets a
  row when given the values it indexed, which the triggers recompute from `old`). The scope words
  let a search find a conversation's entries inside the index rather than filter every match
  afterwards. A later migration that makes SQLite rebuild `recall_recallentry` (most column
  changes do) drops the triggers with the old table, and must create them again (and refill the
  FTS table as the last statement below does).
- MariaDB/MySQL: an InnoDB FULLTEXT index on `terms` (the text's stemmed words, `recall.stemming`),
  searched in natural language mode.
"""

from django.db import migrations

FTS = "recall_recallentry_fts"
TABLE = "recall_recallentry"

def _scope(row: str) -> str:
    """The scope words of an entry (`row` is `new` or `old`): `a<agent>` on every entry, and `g<agent>`
    on the agent's global ones or `c<agent>p<peer>t<topic>` on a chat's (a minus sign as `n`), which
    a search ANDs with its words (recall/selectors.py)."""
    return (
        f"'a' || {row}.agent_id || ' ' || CASE WHEN {row}.peer_id IS NULL THEN 'g' || {row}.agent_id "
        f"ELSE 'c' || {row}.agent_id || 'p' || replace({row}.peer_id, '-', 'n') || 't' || {row}.topic_id END"
    )


#: Merge the FTS5 index into one segment. A fill in one large statement leaves merging behind that
#: each later write pays a share of (at 1M entries, ingest's index cost 0.8 to 1.5 ms a message
#: until merged, 0.5 after; one written in transactions of 5,000 entries showed none: bench/RESULTS.md).
SQLITE_MERGE = f"INSERT INTO {FTS}({FTS}) VALUES ('optimize')"


def sqlite_create(scope=_scope, update_of: str = "") -> list[str]:
    """The FTS table and its triggers, filled from the entry table: the scope column made by
    `scope(row)`; the update trigger fires on updates of the columns `update_of` names (" OF a, b"),
    or on every update (migration 0009 makes them again with its own scope column). The index is
    merged after the fill (`SQLITE_MERGE`)."""
    return [
        f"CREATE VIRTUAL TABLE {FTS} USING fts5(text, scope, content='', "
        "tokenize='porter unicode61 remove_diacritics 2')",
        f"CREATE TRIGGER {TABLE}_ai AFTER INSERT ON {TABLE} BEGIN "
        f"INSERT INTO {FTS}(rowid, text, scope) VALUES (new.id, new.text, {scope('new')}); END",
        f"CREATE TRIGGER {TABLE}_ad AFTER DELETE ON {TABLE} BEGIN "
        f"INSERT INTO {FTS}({FTS}, rowid, text, scope) VALUES ('delete', old.id, old.text, {scope('old')}); END",
        f"CREATE TRIGGER {TABLE}_au AFTER UPDATE{update_of} ON {TABLE} BEGIN "
        f"INSERT INTO {FTS}({FTS}, rowid, text, scope) VALUES ('delete', old.id, old.text, {scope('old')}); "
        f"INSERT INTO {FTS}(rowid, text, scope) VALUES (new.id, new.text, {scope('new')}); END",
        f"INSERT INTO {FTS}(rowid, text, scope) SELECT id, text, {scope(TABLE)} FROM {TABLE}",
        SQLITE_MERGE,
    ]


SQLITE_CREATE = sqlite_create()
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
