from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="content_hash",
            field=models.CharField(
                blank=True,
                help_text="Hash of the curated file these rows came from, for re-import",
                max_length=64,
            ),
        ),
    ]
