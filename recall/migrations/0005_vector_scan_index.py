"""SQLite: a covering index for the vector scan of a search (recall/similar.py).

A search reads the vectors of its scope's most recent entries. Along the scope index alone each row
is a lookup in the table, where one chat's rows lie scattered among every other chat's; an index on
(agent, peer, topic, id, vector) holds them side by side in the order the scan reads them (about
half the CPU at 100,000 entries, bench/RESULTS.md), at the cost of storing each vector twice.
MariaDB/MySQL cannot index a BLOB whole; there the scan reads the table along the scope index.
"""

from django.db import migrations

CREATE = (
    "CREATE INDEX recall_entry_vector_scan_idx "
    "ON recall_recallentry (agent_id, peer_id, topic_id, id, vector)"
)
DROP = "DROP INDEX IF EXISTS recall_entry_vector_scan_idx"


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("recall", "0004_entry_vector")]

    operations = [migrations.RunPython(create, drop)]
