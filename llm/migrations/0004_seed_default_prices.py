"""The default price table (llm/prices.py `DEFAULT_PRICES`) on every database: the prices each earlier
migration seeded as the table stood then, and those added since. The same function puts the table back
in the tests after a transactional test emptied it. A price an operator set is never overwritten."""

from django.db import migrations


def seed(apps, schema_editor):
    from llm.prices import seed_default_prices

    seed_default_prices(apps.get_model("llm", "ModelPrice"))


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0003_anthropic_prompt_cache"),
    ]

    operations = [
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
