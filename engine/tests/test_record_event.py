"""`record_event` writes the row `save()` would write, and hands back the saved event."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import ActivityEvent
from conversations.services.activity import activity_event, record_event

pytestmark = pytest.mark.django_db


def test_a_recorded_event_is_the_row_save_writes_with_its_id(agent, clock):
    data = {"message_id": 7, "text": "grüß dich 🍞", "nested": {"ids": [1, 2]}}
    when = clock.now() + dt.timedelta(seconds=3)

    event = record_event(
        ActivityEvent.Kind.MESSAGE_IN,
        agent_id=agent.pk,
        conversation_id=None,
        summary="x" * 2500,
        data=data,
        when=when,
    )
    saved_by_orm = activity_event(
        ActivityEvent.Kind.MESSAGE_IN, agent_id=agent.pk, summary="x" * 2500, data=data, when=when
    )
    saved_by_orm.save()

    stored = ActivityEvent.objects.get(pk=event.pk)
    fields = ("created", "kind", "agent_id", "conversation_id", "node_id", "summary", "data")
    assert [getattr(stored, f) for f in fields] == [
        getattr(ActivityEvent.objects.get(pk=saved_by_orm.pk), f) for f in fields
    ]
    assert (stored.created, stored.data, len(stored.summary)) == (when, data, 2000)
    assert event.pk < saved_by_orm.pk and not event._state.adding


def test_an_unknown_kind_is_refused_with_the_fix_and_nothing_is_written(agent):
    with pytest.raises(ValueError, match="add it to ActivityEvent.Kind"):
        record_event("made_up", agent_id=agent.pk)
    assert not ActivityEvent.objects.exists()
