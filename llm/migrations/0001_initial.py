"""The LLM accounting models and the global parameters, moved here from the conversations and engine
apps with every row (issue 35).

Their tables already exist, renamed to this app's names by `conversations/0027_llm_accounting_moved`
and `engine/0005_llm_usage_daily_moved`: the models join this app's state only. Their content types
move to this app too, so that permissions granted on them, and admin history, stay attached.
"""

import django.db.models.deletion
from decimal import Decimal
from django.db import migrations, models


#: model -> the app it came from
MOVED_FROM = {
    "llmcall": "conversations",
    "modelprice": "conversations",
    "explicitcache": "conversations",
    "offeredmodel": "conversations",
    "translation": "conversations",
    "siteparameter": "conversations",
    "llmusagedaily": "engine",
}


def _move_content_types(apps, *, forward: bool) -> None:
    """Relabel each moved model's content type, keeping its id (permissions and admin log entries
    point at the id). A database migrated fresh has none yet: they are made after migrating."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model, old_app in MOVED_FROM.items():
        source, target = ("llm", old_app) if not forward else (old_app, "llm")
        if ContentType.objects.filter(app_label=target, model=model).exists():
            continue
        ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def content_types_to_llm(apps, schema_editor):
    _move_content_types(apps, forward=True)


def content_types_back(apps, schema_editor):
    _move_content_types(apps, forward=False)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("agents", "0012_agent_grants_and_access_requests"),
        ("conversations", "0027_llm_accounting_moved"),
        ("engine", "0005_llm_usage_daily_moved"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SiteParameter",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=64, unique=True)),
                        ("value", models.TextField(blank=True)),
                        ("updated", models.DateTimeField()),
                        ("updated_by", models.CharField(blank=True, max_length=150)),
                    ],
                    options={
                        "verbose_name": "global parameter",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="LLMCall",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("created", models.DateTimeField()),
                        ("node_id", models.BigIntegerField(blank=True, null=True)),
                        (
                            "purpose",
                            models.CharField(
                                choices=[
                                    ("plan", "Plan a turn"),
                                    ("describe", "Describe media"),
                                    ("summarize", "Summarize"),
                                    ("translate", "Translate for an operator"),
                                    ("transcribe", "Transcribe a voice note"),
                                    ("image", "Make a picture"),
                                    ("speech", "Speak a voice note"),
                                    ("cache", "Keep an explicit cache"),
                                ],
                                default="plan",
                                max_length=32,
                            ),
                        ),
                        ("provider", models.CharField(max_length=32)),
                        ("model", models.CharField(max_length=100)),
                        ("input_tokens", models.PositiveIntegerField(default=0)),
                        ("output_tokens", models.PositiveIntegerField(default=0)),
                        ("cached_tokens", models.PositiveIntegerField(default=0)),
                        ("thinking_tokens", models.PositiveIntegerField(default=0)),
                        ("audio_tokens", models.PositiveIntegerField(default=0)),
                        ("audio_seconds", models.FloatField(default=0)),
                        ("image_output_tokens", models.PositiveIntegerField(default=0)),
                        ("cost", models.DecimalField(decimal_places=6, default=Decimal("0"), max_digits=12)),
                        ("latency_ms", models.PositiveIntegerField(default=0)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("ok", "OK"),
                                    ("error", "Error"),
                                    ("blocked", "Blocked"),
                                    ("empty", "Empty"),
                                    ("pending", "Pending"),
                                    ("interrupted", "Interrupted"),
                                ],
                                default="ok",
                                max_length=16,
                            ),
                        ),
                        ("error", models.TextField(blank=True)),
                        ("fingerprint", models.CharField(blank=True, max_length=64)),
                        (
                            "reply",
                            models.TextField(
                                blank=True, help_text="The reply text of a finished planning call"
                            ),
                        ),
                        ("worker", models.CharField(blank=True, max_length=120)),
                        ("explicit_cache", models.BooleanField(default=False)),
                        (
                            "agent",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="llm_calls",
                                to="agents.agent",
                            ),
                        ),
                        (
                            "conversation",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="llm_calls",
                                to="conversations.conversation",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "LLM call",
                        "ordering": ["-created", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="LLMUsageDaily",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("day", models.DateField()),
                        ("provider", models.CharField(max_length=32)),
                        ("model", models.CharField(max_length=100)),
                        ("calls", models.PositiveIntegerField(default=0)),
                        ("input_tokens", models.PositiveBigIntegerField(default=0)),
                        ("cached_tokens", models.PositiveBigIntegerField(default=0)),
                        ("output_tokens", models.PositiveBigIntegerField(default=0)),
                        ("thinking_tokens", models.PositiveBigIntegerField(default=0)),
                        ("cost", models.DecimalField(decimal_places=6, default=0, max_digits=14)),
                        ("explicit_cached_tokens", models.PositiveBigIntegerField(default=0)),
                        ("cache_cost", models.DecimalField(decimal_places=6, default=0, max_digits=14)),
                        (
                            "agent",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="agents.agent",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "LLM usage per day",
                        "verbose_name_plural": "LLM usage per day",
                        "ordering": ["-day", "agent", "provider", "model"],
                    },
                ),
                migrations.CreateModel(
                    name="ModelPrice",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("provider", models.CharField(max_length=32)),
                        (
                            "model_prefix",
                            models.CharField(help_text="Matches models starting with this", max_length=100),
                        ),
                        ("input_per_million", models.DecimalField(decimal_places=4, max_digits=10)),
                        (
                            "cached_input_per_million",
                            models.DecimalField(decimal_places=4, default=Decimal("0"), max_digits=10),
                        ),
                        ("output_per_million", models.DecimalField(decimal_places=4, max_digits=10)),
                        (
                            "audio_input_per_million",
                            models.DecimalField(
                                blank=True,
                                decimal_places=4,
                                help_text="Audio input tokens, where the provider bills them apart; empty: the input price",
                                max_digits=10,
                                null=True,
                            ),
                        ),
                        (
                            "audio_per_minute",
                            models.DecimalField(
                                decimal_places=4,
                                default=Decimal("0"),
                                help_text="USD per minute of audio, for models billed by duration (whisper-1)",
                                max_digits=10,
                            ),
                        ),
                        (
                            "image_output_per_million",
                            models.DecimalField(
                                decimal_places=4,
                                default=Decimal("0"),
                                help_text="Image output tokens (a picture a model makes); 0: billed at the output price",
                                max_digits=10,
                            ),
                        ),
                        (
                            "cache_storage_per_million_hour",
                            models.DecimalField(
                                decimal_places=4,
                                default=Decimal("0"),
                                help_text="USD per million tokens per hour an explicit context cache is kept (Gemini)",
                                max_digits=10,
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["provider", "model_prefix"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("provider", "model_prefix"), name="modelprice_unique"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="OfferedModel",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("provider", models.CharField(max_length=32)),
                        ("model", models.CharField(max_length=200)),
                        ("name", models.CharField(blank=True, max_length=255)),
                        (
                            "llm_name",
                            models.CharField(
                                blank=True,
                                help_text="The name personas use in their LLM field (gpt-5-mini, anthropic/claude-sonnet-4.5); empty for a fetched row: openrouter:<model>",
                                max_length=200,
                                verbose_name="LLM name",
                            ),
                        ),
                        ("context_length", models.PositiveIntegerField(blank=True, null=True)),
                        (
                            "input_per_million",
                            models.DecimalField(blank=True, decimal_places=4, max_digits=12, null=True),
                        ),
                        (
                            "output_per_million",
                            models.DecimalField(blank=True, decimal_places=4, max_digits=12, null=True),
                        ),
                        (
                            "source",
                            models.CharField(
                                choices=[
                                    ("fetched", "Fetched from the provider"),
                                    ("operator", "Added or edited by an operator"),
                                ],
                                default="fetched",
                                max_length=16,
                            ),
                        ),
                        (
                            "offered",
                            models.BooleanField(
                                default=False,
                                help_text="Listed as an LLM choice in the agent form",
                                verbose_name="offered to personas",
                            ),
                        ),
                        (
                            "position",
                            models.PositiveIntegerField(default=0, help_text="Display order: smaller first"),
                        ),
                        ("fetched", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "verbose_name": "LLMs and prices",
                        "verbose_name_plural": "LLMs and prices",
                        "ordering": ["provider", "model"],
                        "constraints": [
                            models.UniqueConstraint(fields=("provider", "model"), name="offeredmodel_unique")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Translation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("language", models.CharField(max_length=64)),
                        ("source_digest", models.CharField(max_length=64)),
                        ("source_text", models.TextField()),
                        ("translated_text", models.TextField()),
                        ("created", models.DateTimeField()),
                        (
                            "llm_call",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="llm.llmcall",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="ExplicitCache",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("provider", models.CharField(default="gemini", max_length=32)),
                        ("model", models.CharField(max_length=100)),
                        ("prefix_hash", models.CharField(max_length=64)),
                        ("prefix_turns", models.PositiveIntegerField()),
                        ("name", models.CharField(max_length=200)),
                        ("tokens", models.PositiveIntegerField(default=0)),
                        ("created", models.DateTimeField()),
                        ("expires_at", models.DateTimeField()),
                        (
                            "conversation",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="explicit_caches",
                                to="conversations.conversation",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created", "-id"],
                        "indexes": [
                            models.Index(
                                fields=["conversation", "model"], name="explicitcache_conversation_idx"
                            )
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("model", "prefix_hash"), name="explicitcache_prefix_unique"
                            )
                        ],
                    },
                ),
                migrations.AddIndex(
                    model_name="llmcall",
                    index=models.Index(fields=["created", "agent"], name="llmcall_day_idx"),
                ),
                migrations.AddIndex(
                    model_name="llmcall",
                    index=models.Index(fields=["node_id", "fingerprint"], name="llmcall_fingerprint_idx"),
                ),
                migrations.AddIndex(
                    model_name="llmcall",
                    index=models.Index(fields=["status", "created"], name="llmcall_pending_idx"),
                ),
                migrations.AddIndex(
                    model_name="llmcall",
                    index=models.Index(fields=["conversation", "created"], name="llmcall_conversation_idx"),
                ),
                migrations.AddConstraint(
                    model_name="llmusagedaily",
                    constraint=models.UniqueConstraint(
                        fields=("day", "agent", "provider", "model"), name="llm_usage_daily_unique"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="translation",
                    constraint=models.UniqueConstraint(
                        fields=("language", "source_digest"), name="translation_unique_text"
                    ),
                ),
            ]
        ),
        migrations.RunPython(content_types_to_llm, content_types_back),
    ]
