"""The vector scan's covering index holds what a turn's search bounds it by, on both databases.

A turn's search leaves out the messages its history shows (`messages_before`: a condition on each
entry's kind and message id) and may name kinds; migration 0005's index (agent, peer, topic, id,
vector) held neither, so on SQLite every scanned row was also read from the table, and MariaDB/MySQL,
which cannot index a BLOB whole, read the table for every row (at 1M entries with the history left
out, fused p95 on SQLite 37 to 47 ms against 26 to 36 for a whole history; on MariaDB 89 ms,
bench/RESULTS.md). The index is now (agent, peer, topic, id, kind, message id, vector) on both; on
MariaDB/MySQL the vector column becomes VARBINARY(512), which an index can hold whole (a vector is
256 float16 values, 512 bytes: `recall.embedding`). `recall.similar._scan` names the index.

A later migration that alters `vector` on MariaDB/MySQL (Django would make it a LONGBLOB again) must
drop the index first and make both again as below; one that makes SQLite rebuild the table must
make the index again.
"""

import importlib

from django.db import migrations

first = importlib.import_module("recall.migrations.0002_fulltext")

INDEX = "recall_entry_vector_scan_idx"
COLUMNS = "agent_id, peer_id, topic_id, id, kind, message_id, vector"
OLD_COLUMNS = "agent_id, peer_id, topic_id, id, vector"


#: The statements of each direction, per database.
FORWARD = {
    "sqlite": [f"DROP INDEX IF EXISTS {INDEX}", f"CREATE INDEX {INDEX} ON recall_recallentry ({COLUMNS})"],
    "mysql": [
        f"ALTER TABLE recall_recallentry MODIFY vector VARBINARY(512) NULL, ADD INDEX {INDEX} ({COLUMNS})"
    ],
}
BACKWARD = {
    "sqlite": [
        f"DROP INDEX IF EXISTS {INDEX}",
        f"CREATE INDEX {INDEX} ON recall_recallentry ({OLD_COLUMNS})",
    ],
    "mysql": [f"ALTER TABLE recall_recallentry DROP INDEX {INDEX}, MODIFY vector LONGBLOB NULL"],
}


def forward(apps, schema_editor) -> None:
    first._run(schema_editor, FORWARD)


def backward(apps, schema_editor) -> None:
    first._run(schema_editor, BACKWARD)


class Migration(migrations.Migration):
    # InnoDB's ALTER TABLE commits on its own.
    atomic = False

    dependencies = [("recall", "0010_fulltext_merged")]

    operations = [migrations.RunPython(forward, backward)]
