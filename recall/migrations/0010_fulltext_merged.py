"""SQLite: merge the FTS5 index into one segment (`SQLITE_MERGE` of migration 0002).

Migrations 0002 and 0009 filled the index in one statement each, which leaves merging behind
(segments flushed from FTS5's buffer within the one transaction); each message indexed afterwards
paid a share of it (ingest's index cost at 1M entries 0.8 to 1.5 ms a message, 0.5 ms once
merged). They merge it now after their fill; this merges the index of a database that ran them
before. About 3 s of CPU at a million entries. MariaDB/MySQL has nothing to do, and going
back leaves the index as it is.
"""

import importlib

from django.db import migrations

first = importlib.import_module("recall.migrations.0002_fulltext")


def forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(first.SQLITE_MERGE)


class Migration(migrations.Migration):
    dependencies = [("recall", "0009_sqlite_scoped_terms")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
