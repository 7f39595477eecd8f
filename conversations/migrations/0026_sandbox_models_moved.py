"""The six sandbox models now belong to the `sandbox` app.

Only Django's picture of the models changes here: the tables, their rows and their ids stay as they
are. `sandbox.0001_initial` takes the same tables over, `sandbox.0002` moves the models' content
types (and with them the permissions that groups hold), and `sandbox.0003` renames the tables.
"""

from django.db import migrations

STATE_OPERATIONS = [
    # The relations first, so that no deleted model is still pointed at while the state is rebuilt.
    migrations.RemoveField(model_name="sandboxupdate", name="chat"),
    migrations.RemoveField(model_name="sandboxmessage", name="chat"),
    migrations.RemoveField(model_name="sandboxmember", name="chat"),
    migrations.RemoveField(model_name="sandboxtopic", name="chat"),
    migrations.RemoveField(model_name="sandboxmember", name="user"),
    migrations.RemoveField(model_name="sandboxmessage", name="sender"),
    migrations.RemoveField(model_name="sandboxupdate", name="actor"),
    migrations.RemoveField(model_name="sandboxuser", name="agent"),
    migrations.DeleteModel(name="SandboxChat"),
    migrations.DeleteModel(name="SandboxTopic"),
    migrations.DeleteModel(name="SandboxMember"),
    migrations.DeleteModel(name="SandboxMessage"),
    migrations.DeleteModel(name="SandboxUpdate"),
    migrations.DeleteModel(name="SandboxUser"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0025_sandbox_update_created_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(database_operations=[], state_operations=STATE_OPERATIONS),
    ]
