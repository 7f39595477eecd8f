"""The sandbox tables take the `sandbox` app's names (`conversations_sandboxchat` becomes
`sandbox_sandboxchat`, and so on). A rename on SQLite and on MariaDB: rows, ids, foreign keys that
point at the tables and the auto-increment counters are kept."""

from django.db import migrations

MODELS = ["SandboxUser", "SandboxChat", "SandboxMember", "SandboxMessage", "SandboxTopic", "SandboxUpdate"]


class Migration(migrations.Migration):
    dependencies = [
        ("sandbox", "0002_move_content_types"),
    ]

    operations = [migrations.AlterModelTable(name=name, table=None) for name in MODELS]
