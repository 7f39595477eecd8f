"""The daily LLM usage totals move to the llm app (issue 35): the table is renamed, every row stays;
the model joins the llm app's state in `llm/0001_initial`."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("engine", "0004_explicit_cache")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.AlterModelTable(name="llmusagedaily", table="llm_llmusagedaily")],
            state_operations=[migrations.DeleteModel(name="llmusagedaily")],
        )
    ]
