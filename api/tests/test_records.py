"""/api/v1/agents/{id}/records/{kind}: stored records through the agent's own validation and store."""

from __future__ import annotations

import pytest

from conversations.models import ActivityEvent
from memory.models import Memory, Note, ScheduledEvent, ScheduleEntry

pytestmark = pytest.mark.django_db


def _activity() -> list[str]:
    return list(ActivityEvent.objects.order_by("id").values_list("summary", flat=True))


def test_a_memory_is_created_read_updated_and_deleted(api, wendy, clock):
    base = f"/agents/{wendy.pk}/records/memories"

    created = api.post(base, {"content": "Ann's cat is called Biscuit."})
    assert created.status_code == 201, created.content
    entry = created.json()
    assert entry["id"].startswith("memory-") and entry["created"] is not None
    memory = Memory.objects.get(agent=wendy)
    assert (memory.kind, memory.content) == (Memory.Kind.EPISODIC, "Ann's cat is called Biscuit.")

    assert api.get(f"{base}/{entry['id']}").json()["content"] == "Ann's cat is called Biscuit."
    updated = api.put(f"{base}/{entry['id']}", {"content": "Ann's cat is called Crumpet."})
    assert updated.json()["content"] == "Ann's cat is called Crumpet."
    assert [m["content"] for m in api.get(base).json()["items"]] == ["Ann's cat is called Crumpet."]

    assert api.delete(f"{base}/{entry['id']}").status_code == 204
    assert not Memory.objects.exists()
    assert api.get(f"{base}/{entry['id']}").status_code == 404
    assert _activity() == [
        f"remember {entry['id']} created by owner (API)",
        f"remember {entry['id']} updated by owner (API)",
        f"remember {entry['id']} deleted by owner (API)",
    ]


def test_notes_belong_to_one_conversation(api, wendy, clock):
    base = f"/agents/{wendy.pk}/records/notes"

    missing = api.post(base, {"content": "Prefers mornings."})
    assert missing.status_code == 422
    assert missing.json()["field"] == "channel_id"

    note = api.post(base, {"content": "Prefers mornings.", "channel_id": 1001, "id": "note-ann"}).json()
    api.post(base, {"content": "Works nights.", "channel_id": 2002})
    assert note["channel_id"] == 1001
    assert [n["content"] for n in api.get(base, channel_id=1001).json()["items"]] == ["Prefers mornings."]
    assert api.get(base).json()["count"] == 2
    assert api.get(f"{base}/note-ann").json()["field"] == "channel_id"
    assert api.get(f"{base}/note-ann", channel_id=2002).status_code == 404
    assert api.get(f"{base}/note-ann", channel_id=1001).json()["content"] == "Prefers mornings."
    duplicate = api.post(base, {"content": "Again.", "channel_id": 1001, "id": "note-ann"})
    assert (duplicate.status_code, duplicate.json()["field"]) == (422, "id")
    assert Note.objects.count() == 2


def test_an_event_s_time_is_checked_as_the_agent_s_own_task_is(api, wendy, clock):
    base = f"/agents/{wendy.pk}/records/events"

    past = api.post(
        base, {"content": "Too late", "channel_id": 1001, "fields": {"time": "2001-01-01T10:00:00"}}
    )
    assert (past.status_code, past.json()["field"], "is in the past" in past.json()["detail"]) == (
        422,
        "fields.time",
        True,
    )
    untimed = api.post(base, {"content": "Whenever", "channel_id": 1001})
    assert (untimed.status_code, untimed.json()["field"]) == (422, "fields.time")
    bad = api.post(base, {"content": "Ask about the exam", "channel_id": 1001, "fields": {"time": "soonish"}})
    assert bad.status_code == 422
    body = bad.json()
    assert body["field"] == "fields.time" and "ISO 8601" in body["detail"]
    assert not ScheduledEvent.objects.exists()

    good = api.post(
        base,
        {
            "content": "Ask about the exam",
            "channel_id": 1001,
            "fields": {"time": "2030-05-01T10:00:00", "timezone": "Europe/London", "interval": "1 days"},
        },
    )
    assert good.status_code == 201, good.content
    assert good.json()["fields"]["interval"] == "1 days"
    assert ScheduledEvent.objects.get().due_at is not None


def test_unknown_fields_and_empty_content_are_refused_with_the_fix(api, wendy):
    base = f"/agents/{wendy.pk}/records/events"
    unknown = api.post(base, {"content": "x", "channel_id": 1, "fields": {"when": "tomorrow"}}).json()
    assert unknown["field"] == "fields.when"
    assert "use time, timezone, interval, occurrences" in unknown["detail"]
    zone = api.post(
        base, {"content": "x", "channel_id": 1, "fields": {"time": "2030-01-01", "timezone": "Mars/Base"}}
    )
    assert (zone.status_code, zone.json()["field"]) == (422, "fields.timezone")
    assert 'timezone "Mars/Base" is not an IANA zone' in zone.json()["detail"]
    empty = api.post(f"/agents/{wendy.pk}/records/memories", {"content": ""})
    assert (empty.status_code, empty.json()["field"]) == (422, "content")
    assert api.get(f"/agents/{wendy.pk}/records/diaries").status_code == 404


def test_a_schedule_entry_that_ends_before_it_starts_is_refused(api, wendy, clock):
    base = f"/agents/{wendy.pk}/records/schedule"
    fields = {"start_time": "2030-05-01T10:00:00+00:00", "end_time": "2030-05-01T09:00:00+00:00"}

    refused = api.post(base, {"content": "Gardening", "fields": fields})
    assert (refused.status_code, refused.json()["field"]) == (422, "fields.end_time")
    assert "give a later end" in refused.json()["detail"]
    assert not ScheduleEntry.objects.exists()

    fields["end_time"] = "2030-05-01T12:00:00+00:00"
    entry = api.post(base, {"content": "Gardening", "fields": {**fields, "responsiveness": 20}}).json()
    assert (entry["content"], entry["fields"]["responsiveness"]) == ("Gardening", 20)
    overlap = api.post(
        base, {"content": "Lunch", "fields": {**fields, "start_time": "2030-05-01T11:00:00+00:00"}}
    )
    assert (overlap.status_code, 'overlaps "Gardening"' in overlap.json()["detail"]) == (422, True)
    assert ScheduleEntry.objects.count() == 1


def test_each_write_needs_its_own_model_permission(api_as, make_staff, wendy, clock):
    base = f"/agents/{wendy.pk}/records/memories"
    reader = api_as(make_staff("reader", "agents.view_agent", "memory.view_memory"))
    writer = api_as(make_staff("writer", "agents.view_agent", "memory.view_memory", "memory.add_memory"))
    nobody = api_as(make_staff("nobody"))

    assert reader.get(base).status_code == 200
    refused = reader.post(base, {"content": "Likes tea."})
    assert (refused.status_code, "memory.add_memory" in refused.json()["detail"]) == (403, True)
    assert nobody.post(base, {"content": "Likes tea."}).status_code == 404
    entry = writer.post(base, {"content": "Likes tea."}).json()
    assert writer.put(f"{base}/{entry['id']}", {"content": "Likes coffee."}).status_code == 403
    assert writer.delete(f"{base}/{entry['id']}").status_code == 403
    assert Memory.objects.get().content == "Likes tea."


def test_another_agent_s_record_is_not_found(api, wendy, heidi, clock):
    entry = api.post(f"/agents/{heidi.pk}/records/memories", {"content": "Heidi's own."}).json()
    assert api.get(f"/agents/{wendy.pk}/records/memories/{entry['id']}").status_code == 404
    assert api.delete(f"/agents/{wendy.pk}/records/memories/{entry['id']}").status_code == 404
    assert Memory.objects.filter(agent=heidi).exists()
