import memory.models
from django.db import migrations, models


def number_existing_entries(apps, schema_editor):
    """Rows that predate ids get `<prefix>-<pk>`: for plans, the ids the prompt already showed.

    AddField fills existing rows with one computed default, so every old memory would share an id.
    """
    Plan = apps.get_model("memory", "Plan")
    for model, prefix in (("Memory", "memory"), ("Summary", "summary"), ("Intention", "intent")):
        rows = apps.get_model("memory", model).objects
        for pk in rows.values_list("pk", flat=True):
            rows.filter(pk=pk).update(entry_id=f"{prefix}-{pk}")
    for pk in Plan.objects.filter(plan_id="").values_list("pk", flat=True):
        Plan.objects.filter(pk=pk).update(plan_id=f"plan-{pk}")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0002_memory_content_hash"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="entry_id",
            field=models.CharField(
                default=memory.models.new_memory_id,
                help_text="The id the agent uses to update or delete this memory (a remember task's id)",
                max_length=100,
            ),
        ),
        migrations.AlterField(
            model_name="plan",
            name="plan_id",
            field=models.CharField(
                default=memory.models.new_plan_id,
                help_text="The id the agent uses to update or delete this plan (a plan task's id)",
                max_length=100,
            ),
        ),
        migrations.AddField(
            model_name="summary",
            name="entry_id",
            field=models.CharField(
                default=memory.models.new_summary_id,
                help_text="The id the agent uses to update or delete it",
                max_length=100,
            ),
        ),
        migrations.AddField(
            model_name="intention",
            name="entry_id",
            field=models.CharField(
                default=memory.models.new_intention_id,
                help_text="The id the agent uses to update or delete it",
                max_length=100,
            ),
        ),
        migrations.RunPython(number_existing_entries, migrations.RunPython.noop),
    ]
