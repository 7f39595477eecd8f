"""MariaDB/MySQL: each entry's `terms` also holds its words prefixed with its scope
(`recall/fulltext.py`), so that a conversation's search makes InnoDB read only its scopes' rows.

Existing rows get their scoped words from the plain ones they hold, BATCH rows a transaction; going
back drops every word with an underscore (only scoped words have one). SQLite, whose `terms` is
empty, has nothing to do.
"""

from django.db import migrations, transaction

from recall.fulltext import entry_terms

BATCH = 2000
TABLE = "recall_recallentry"


def rewrite(schema_editor, terms_of, *, vendor: str = "mysql", column: str = "terms") -> None:
    """Write every entry's `terms` as `terms_of(id, agent_id, peer_id, topic_id, <column>)` gives
    them, BATCH rows a transaction, on the database `vendor` only (migration 0009 does SQLite's
    from the text)."""
    connection = schema_editor.connection
    if connection.vendor != vendor:
        return
    last = 0
    while True:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, agent_id, peer_id, topic_id, {column} FROM {TABLE} WHERE id > %s ORDER BY id LIMIT %s",  # noqa: S608
                [last, BATCH],
            )
            found = cursor.fetchall()
            if not found:
                return
            cursor.executemany(
                f"UPDATE {TABLE} SET terms = %s WHERE id = %s",  # noqa: S608
                [(terms_of(row), row[0]) for row in found],
            )
        last = found[-1][0]


def _scoped(row) -> str:
    _, agent_id, peer_id, topic_id, terms = row
    plain = [word for word in terms.split() if "_" not in word]
    return entry_terms(plain, agent_id=agent_id, peer_id=peer_id, topic_id=topic_id)


def _plain(row) -> str:
    return " ".join(word for word in row[4].split() if "_" not in word)


def forward(apps, schema_editor) -> None:
    rewrite(schema_editor, _scoped)


def backward(apps, schema_editor) -> None:
    rewrite(schema_editor, _plain)


class Migration(migrations.Migration):
    # One transaction per batch (InnoDB updates the FULLTEXT index at each commit), not one for all.
    atomic = False

    dependencies = [("recall", "0007_provider_vectors")]

    operations = [migrations.RunPython(forward, backward)]
