"""The sandbox models' content types follow them from `conversations` to `sandbox`.

A content type row keeps its id, so every permission on it (and every group or user holding one),
every admin log entry and every generic relation stays attached: `conversations.view_sandboxmessage`
becomes `sandbox.view_sandboxmessage`. On a fresh database there are no rows yet (Django adds them
after migrating), and nothing is moved.
"""

from django.db import migrations

MODELS = ["sandboxuser", "sandboxchat", "sandboxmember", "sandboxmessage", "sandboxtopic", "sandboxupdate"]


def _move(apps, schema_editor, source: str, target: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    rows = content_type.objects.using(db)
    for model in MODELS:
        # A row already under the target label (created by a `migrate` run in between) would make
        # the unique (app_label, model) pair fail; the source row is the one that carries the
        # permissions operators granted, so it wins and the empty newcomer goes.
        if rows.filter(app_label=source, model=model).exists():
            rows.filter(app_label=target, model=model).delete()
            rows.filter(app_label=source, model=model).update(app_label=target)


def forwards(apps, schema_editor) -> None:
    _move(apps, schema_editor, "conversations", "sandbox")


def backwards(apps, schema_editor) -> None:
    _move(apps, schema_editor, "sandbox", "conversations")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("sandbox", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
