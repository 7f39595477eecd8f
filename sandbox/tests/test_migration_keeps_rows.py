"""Moving the sandbox models from `conversations` to `sandbox` keeps an existing database's rows.

The database is taken back to where it stood before the move (conversations 0025, no sandbox
migrations), filled through the models as they were then, and migrated forward to the latest
migrations: every row, every relation between them, and the content types with the permissions
granted on them are still there, read through the models as they are now.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sandbox.models import (
    SandboxChat,
    SandboxMember,
    SandboxMessage,
    SandboxTopic,
    SandboxUpdate,
    SandboxUser,
)

BEFORE_THE_MOVE = [("conversations", "0025_sandbox_update_created_index")]
SANDBOX_MODELS = [
    "sandboxuser",
    "sandboxchat",
    "sandboxmember",
    "sandboxmessage",
    "sandboxtopic",
    "sandboxupdate",
]
WHEN = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def _migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate the test database to `targets`; returns the apps (historical models) as the database
    stands there: every migration still applied, not only the targets' ancestors, so that a later
    migration of an app the targets do not depend on (say a new NOT NULL column of agents) is in them."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    ContentType.objects.clear_cache()
    loader = executor.loader
    loader.build_graph()
    applied = sorted(key for key in loader.applied_migrations if key in loader.graph.nodes)
    return loader.project_state(applied).apps


def _latest() -> list[tuple[str, str | None]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def before_the_move(transactional_db) -> Iterator[Any]:
    """The historical apps before the move; the database goes back to the latest migrations after,
    whatever the test did, so that the tests after it find the schema they expect."""
    latest = _latest()
    try:
        yield _migrate(BEFORE_THE_MOVE)
    finally:
        _migrate(latest)


def _fill(apps: Any) -> dict[str, Any]:
    """One of everything, related the way the sandbox relates them, through the old models."""
    agent_model = apps.get_model("agents", "Agent")
    user_model = apps.get_model("conversations", "SandboxUser")
    chat_model = apps.get_model("conversations", "SandboxChat")
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    group_model = apps.get_model("auth", "Group")

    agent = agent_model.objects.create(
        name="Wendy", phone="+15550000001", instructions="You are Wendy.", transport="sandbox", llm="gemini"
    )
    wendy = user_model.objects.create(user_id=9_000_000_001, name="Wendy", agent=agent, blocked_user_ids=[42])
    alice = user_model.objects.create(user_id=1001, name="Alice", username="alice", about="hi")
    group = chat_model.objects.create(
        kind="group", peer_id=-5001, title="Book club", forum=True, next_message_id=3
    )
    apps.get_model("conversations", "SandboxMember").objects.create(chat=group, user=wendy, read_up_to=2)
    apps.get_model("conversations", "SandboxMember").objects.create(
        chat=group, user=alice, muted=True, unread_mark=True, cannot_write="restricted"
    )
    topic = apps.get_model("conversations", "SandboxTopic").objects.create(
        chat=group, topic_id=1, title="Novels"
    )
    message = apps.get_model("conversations", "SandboxMessage").objects.create(
        chat=group,
        message_id=2,
        sender=alice,
        date=WHEN,
        text="Anyone read Dune?",
        topic_id=1,
        reactions=[{"emoji": "👍", "user_id": 9_000_000_001}],
        random_id=77,
    )
    update = apps.get_model("conversations", "SandboxUpdate").objects.create(
        chat=group, kind="new_message", message_id=2, actor=alice, created=WHEN
    )
    # An operator's group holding a permission on a sandbox model, as granted before the move.
    message_type = content_type.objects.get(app_label="conversations", model="sandboxmessage")
    readers = group_model.objects.create(name="Sandbox readers")
    readers.permissions.add(permission.objects.get(content_type=message_type, codename="view_sandboxmessage"))
    type_ids = {
        row.model: row.id
        for row in content_type.objects.filter(app_label="conversations", model__in=SANDBOX_MODELS)
    }
    return {
        "agent": agent.id,
        "wendy": wendy.id,
        "alice": alice.id,
        "group": group.id,
        "topic": topic.id,
        "message": message.id,
        "update": update.id,
        "type_ids": type_ids,
    }


def test_moving_the_sandbox_models_keeps_every_row_relation_and_permission(before_the_move):
    ids = _fill(before_the_move)
    assert len(ids["type_ids"]) == len(SANDBOX_MODELS)

    _migrate(_latest())

    wendy = SandboxUser.objects.get(id=ids["wendy"])
    assert (wendy.user_id, wendy.agent_id, wendy.blocked_user_ids) == (9_000_000_001, ids["agent"], [42])
    alice = SandboxUser.objects.get(id=ids["alice"])
    assert (alice.username, alice.about) == ("alice", "hi")
    group = SandboxChat.objects.get(id=ids["group"])
    assert (group.kind, group.peer_id, group.title, group.forum, group.next_message_id) == (
        "group",
        -5001,
        "Book club",
        True,
        3,
    )
    assert set(group.members.values_list("id", flat=True)) == {ids["wendy"], ids["alice"]}
    alice_in_group = SandboxMember.objects.get(chat=group, user=alice)
    assert (alice_in_group.muted, alice_in_group.unread_mark, alice_in_group.cannot_write) == (
        True,
        True,
        "restricted",
    )
    assert SandboxMember.objects.get(chat=group, user=wendy).read_up_to == 2
    assert SandboxTopic.objects.get(id=ids["topic"]).chat_id == group.id
    message = SandboxMessage.objects.get(id=ids["message"])
    assert (message.chat_id, message.sender_id, message.text, message.topic_id, message.random_id) == (
        group.id,
        alice.id,
        "Anyone read Dune?",
        1,
        77,
    )
    assert message.date == WHEN
    assert message.reactions == [{"emoji": "👍", "user_id": 9_000_000_001}]
    update = SandboxUpdate.objects.get(id=ids["update"])
    assert (update.chat_id, update.actor_id, update.kind, update.message_id) == (
        group.id,
        alice.id,
        "new_message",
        2,
    )
    assert wendy.agent.sandbox_user == wendy

    # The content types moved to the sandbox app under their old ids, with their permissions.
    moved = {
        row.model: row.id for row in ContentType.objects.filter(app_label="sandbox", model__in=SANDBOX_MODELS)
    }
    assert moved == ids["type_ids"]
    assert not ContentType.objects.filter(app_label="conversations", model__in=SANDBOX_MODELS).exists()
    assert ContentType.objects.get_for_model(SandboxMessage).id == ids["type_ids"]["sandboxmessage"]
    readers = Group.objects.get(name="Sandbox readers")
    assert [(p.content_type.app_label, p.codename) for p in readers.permissions.all()] == [
        ("sandbox", "view_sandboxmessage")
    ]

    # New rows continue the old ids (the tables' counters came along with the rename).
    newcomer = SandboxUser.objects.create(user_id=1002, name="Bob")
    assert newcomer.id > ids["alice"]
    assert SandboxUser._meta.db_table == "sandbox_sandboxuser"
