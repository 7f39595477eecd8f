"""LLM accounting and the global parameters move to the llm app (issue 35): every row stays.

The tables are renamed to the llm app's names (a rename keeps rows, keys and indexes on SQLite and
MariaDB); the models leave this app's state here and join the llm app's in `llm/0001_initial`,
which also moves their content types (and so their permissions) to the llm app.
"""

from django.db import migrations

#: model -> its table in the llm app
MOVED = {
    "translation": "llm_translation",
    "llmcall": "llm_llmcall",
    "modelprice": "llm_modelprice",
    "explicitcache": "llm_explicitcache",
    "offeredmodel": "llm_offeredmodel",
    "siteparameter": "llm_siteparameter",
}


class Migration(migrations.Migration):
    dependencies = [("conversations", "0026_sandbox_models_moved")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable(name=name, table=table) for name, table in MOVED.items()
            ],
            # Translation first: it refers to LLMCall.
            state_operations=[migrations.DeleteModel(name=name) for name in MOVED],
        )
    ]
