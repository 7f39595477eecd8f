"""Moving LLM accounting and the global parameters into the llm app keeps a database's rows.

A database is taken back to the migrations before the move, filled through the historical models,
then migrated forward: every row, every relation between them, and the content types (so the
permissions granted on them) are still there, under the llm app.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from llm.models import (
    ExplicitCache,
    LLMCall,
    LLMUsageDaily,
    ModelPrice,
    OfferedModel,
    SiteParameter,
    Translation,
)

pytestmark = pytest.mark.django_db(transaction=True)

#: The migrations that move the models out of their old apps.
MOVES = [("conversations", "0027_llm_accounting_moved"), ("engine", "0005_llm_usage_daily_moved")]
#: model -> the app it lived in before the move
OLD_APP = {
    "llmcall": "conversations",
    "modelprice": "conversations",
    "explicitcache": "conversations",
    "offeredmodel": "conversations",
    "translation": "conversations",
    "siteparameter": "conversations",
    "llmusagedaily": "engine",
}
WHEN = dt.datetime(2026, 3, 2, 9, 30, tzinfo=dt.UTC)


def _before_the_move(executor: MigrationExecutor) -> list[tuple[str, str]]:
    """The migrations the moves build on (read from the graph, so a renumbered parent still works)."""
    parents = {parent.key for move in MOVES for parent in executor.loader.graph.node_map[move].parents}
    return sorted(key for key in parents if key[0] in {"conversations", "engine"})


def _migrate(targets: list[tuple[str, str]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    ContentType.objects.clear_cache()
    return executor


def _applied_state(executor: MigrationExecutor):
    """The project state as the database stands: every migration still applied, not only the ancestors
    of the targets, so that a later migration of an app the moves do not touch (say a new NOT NULL
    column of agents) is in the historical models."""
    loader = executor.loader
    loader.build_graph()  # re-read what is applied now
    return loader.project_state(sorted(key for key in loader.applied_migrations if key in loader.graph.nodes))


@pytest.fixture
def before_the_move() -> Iterator:
    """The historical apps at the migrations before the move; the latest migrations again afterwards."""
    executor = MigrationExecutor(connection)
    before = _before_the_move(executor)
    try:
        executor = _migrate(before)
        yield _applied_state(executor).apps
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def _fill(apps) -> dict[str, int]:
    """One row of each moved model, related as in production; returns their ids."""
    Agent = apps.get_model("agents", "Agent")
    Conversation = apps.get_model("conversations", "Conversation")
    agent = Agent.objects.create(name="Wendy", phone="+15550000001", instructions="Be kind.")
    chat = Conversation.objects.create(agent=agent, peer_id=1001, kind="dm", title="Alice")
    call = apps.get_model("conversations", "LLMCall").objects.create(
        created=WHEN,
        agent=agent,
        conversation=chat,
        purpose="translate",
        provider="gemini",
        model="gemini-2.5-flash",
        input_tokens=1200,
        cost=Decimal("0.000360"),
    )
    translation = apps.get_model("conversations", "Translation").objects.create(
        language="French",
        source_digest="d" * 64,
        source_text="Good morning",
        translated_text="Bonjour",
        llm_call=call,
        created=WHEN,
    )
    price = apps.get_model("conversations", "ModelPrice").objects.create(
        provider="openai", model_prefix="gpt-test", input_per_million=Decimal("1.5"), output_per_million=3
    )
    cache = apps.get_model("conversations", "ExplicitCache").objects.create(
        conversation=chat,
        model="gemini-2.5-flash",
        prefix_hash="h" * 64,
        prefix_turns=12,
        name="cachedContents/abc123",
        created=WHEN,
        expires_at=WHEN + dt.timedelta(hours=1),
    )
    offered = apps.get_model("conversations", "OfferedModel").objects.create(
        provider="openrouter", model="anthropic/claude-sonnet-4.5", offered=True, position=3
    )
    parameter = apps.get_model("conversations", "SiteParameter").objects.create(
        name="CINDY_HISTORY_SIZE", value="40", updated=WHEN, updated_by="operator"
    )
    usage = apps.get_model("engine", "LLMUsageDaily").objects.create(
        day=WHEN.date(),
        agent=agent,
        provider="gemini",
        model="gemini-2.5-flash",
        calls=7,
        cost=Decimal("0.25"),
    )
    return {
        "agent": agent.pk,
        "conversation": chat.pk,
        "llmcall": call.pk,
        "translation": translation.pk,
        "modelprice": price.pk,
        "explicitcache": cache.pk,
        "offeredmodel": offered.pk,
        "siteparameter": parameter.pk,
        "llmusagedaily": usage.pk,
    }


def _content_types(apps) -> dict[str, int]:
    """The moved models' content types, made as `migrate` makes them for a database of that time."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    return {
        model: ContentType.objects.get_or_create(app_label=app, model=model)[0].pk
        for model, app in OLD_APP.items()
    }


def test_a_database_migrated_across_the_move_keeps_every_row_relation_and_content_type(before_the_move):
    apps = before_the_move
    assert "conversations_llmcall" in connection.introspection.table_names()
    ids = _fill(apps)
    types = _content_types(apps)
    Permission = apps.get_model("auth", "Permission")
    view_calls = Permission.objects.get_or_create(
        content_type_id=types["llmcall"], codename="view_llmcall", defaults={"name": "Can view LLM call"}
    )[0]
    accountants = apps.get_model("auth", "Group").objects.create(name="accountants")
    accountants.permissions.add(view_calls)

    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    call = LLMCall.objects.get(pk=ids["llmcall"])
    assert (call.agent_id, call.conversation_id, call.input_tokens, call.cost) == (
        ids["agent"],
        ids["conversation"],
        1200,
        Decimal("0.000360"),
    )
    assert Translation.objects.get(pk=ids["translation"]).llm_call_id == call.pk
    assert ModelPrice.objects.get(pk=ids["modelprice"]).model_prefix == "gpt-test"
    assert ExplicitCache.objects.get(pk=ids["explicitcache"]).conversation_id == ids["conversation"]
    assert (
        OfferedModel.objects.get(pk=ids["offeredmodel"]).persona_name
        == "openrouter:anthropic/claude-sonnet-4.5"
    )
    assert SiteParameter.objects.get(pk=ids["siteparameter"]).value == "40"
    usage = LLMUsageDaily.objects.get(pk=ids["llmusagedaily"])
    assert (usage.agent_id, usage.calls, usage.cost) == (ids["agent"], 7, Decimal("0.25"))
    for model, pk in types.items():
        moved = ContentType.objects.get(pk=pk)
        assert (moved.app_label, moved.model) == ("llm", model)
        assert not ContentType.objects.filter(app_label=OLD_APP[model], model=model).exists()
    granted = Group.objects.get(name="accountants").permissions.get()
    assert (granted.content_type.app_label, granted.codename) == ("llm", "view_llmcall")
    tables = set(connection.introspection.table_names())
    assert {model._meta.db_table for model in (LLMCall, Translation, LLMUsageDaily, SiteParameter)} <= tables
    assert not {"conversations_llmcall", "conversations_translation", "engine_llmusagedaily"} & tables
