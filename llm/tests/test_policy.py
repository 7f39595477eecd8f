from __future__ import annotations

import pytest

from conversations.models import ActivityEvent
from llm.policy import apply_policy
from llm.tasks import Task


@pytest.mark.parametrize("kind", ["block", "unblock", "clear-conversation"])
def test_dm_only_kinds_are_refused_in_groups_with_an_event(group, kind):
    allowed, refused = apply_policy(
        [Task(kind), Task("send", {"text": "hi", "reply_to": None})], conversation=group, trigger_sender_id=1
    )

    assert [t.kind for t in allowed] == ["send"]
    assert refused[0].task.kind == kind
    event = ActivityEvent.objects.get(kind="policy_refused")
    assert "only allowed in direct messages" in event.summary
    assert event.conversation_id == group.pk and event.data["kind"] == kind


@pytest.mark.parametrize("kind", ["block", "unblock", "clear-conversation"])
def test_dm_only_kinds_pass_in_dms(dm, kind):
    allowed, refused = apply_policy([Task(kind)], conversation=dm, trigger_sender_id=1001)

    assert [t.kind for t in allowed] == [kind] and refused == []
    assert not ActivityEvent.objects.exists()


def test_shutdown_needs_an_operator(dm, settings):
    settings.CINDY_OPERATOR_IDS = [42]

    allowed, refused = apply_policy([Task("shutdown")], conversation=dm, trigger_sender_id=1001)
    assert allowed == [] and "not in CINDY_OPERATOR_IDS" in refused[0].reason

    allowed, refused = apply_policy([Task("shutdown")], conversation=dm, trigger_sender_id=42)
    assert [t.kind for t in allowed] == ["shutdown"] and refused == []


def test_shutdown_without_a_triggering_sender_is_refused(dm, settings):
    settings.CINDY_OPERATOR_IDS = [42]

    allowed, _ = apply_policy([Task("shutdown")], conversation=dm, trigger_sender_id=None)

    assert allowed == []
    assert ActivityEvent.objects.filter(kind="policy_refused").count() == 1
