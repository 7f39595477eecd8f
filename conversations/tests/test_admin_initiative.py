"""Admin pages for the initiative: XSend, events, the schedule timeline and the media library."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from cindy_site.testing.factories import AgentFactory
from conversations.models import Conversation, TaskGraph
from media_catalog.models import LibraryItem
from memory.models import ScheduledEvent, ScheduleEntry

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture
def conversation(db) -> Conversation:
    agent = AgentFactory(name="Heidi", timezone="UTC")
    return Conversation.objects.create(agent=agent, peer_id=4242, kind=Conversation.Kind.DM, title="Bob")


def test_xsend_page_nudges_the_agent_with_the_operators_intent(verified_client, conversation):
    url = reverse("admin:conversations_conversation_xsend", args=[conversation.pk])
    assert b"xsend-form" in verified_client.get(url).content

    response = verified_client.post(url, {"intent": "Ask Bob about the goats"})

    assert response.status_code == 302
    graph = TaskGraph.objects.get(conversation=conversation)
    assert (graph.trigger, graph.context["xsend"]) == ("nudge", "Ask Bob about the goats")
    assert graph.nodes.get().kind == "received"


def test_the_conversation_page_links_to_xsend_and_its_events(verified_client, conversation):
    page = verified_client.get(
        reverse("admin:conversations_conversation_change", args=[conversation.pk])
    ).content
    assert reverse("admin:conversations_conversation_xsend", args=[conversation.pk]).encode() in page
    assert f"channel_id={conversation.peer_id}".encode() in page


def test_events_are_listed_per_conversation_and_edited_with_their_due_time_recomputed(
    verified_client, conversation, clock
):
    event = ScheduledEvent.objects.create(
        agent=conversation.agent,
        channel_id=conversation.peer_id,
        intent="Ask about the goats",
        time_raw=(clock.now() + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S"),
        created=clock.now(),
    )
    listing = verified_client.get(
        reverse("admin:memory_scheduledevent_changelist") + f"?channel_id={conversation.peer_id}"
    )
    assert b"Ask about the goats" in listing.content

    url = reverse("admin:memory_scheduledevent_change", args=[event.pk])
    later = (clock.now() + dt.timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%S")
    data = {
        "agent": conversation.agent.pk,
        "channel_id": conversation.peer_id,
        "entry_id": event.entry_id,
        "intent": "Ask about the cheese",
        "time_raw": later,
        "timezone": "",
        "interval_raw": "",
        "occurrences": "",
    }
    assert verified_client.post(url, data).status_code == 302
    event.refresh_from_db()
    assert event.due_at == dt.datetime.fromisoformat(later).replace(tzinfo=dt.UTC)

    data["time_raw"] = (clock.now() - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    response = verified_client.post(url, data)
    assert response.status_code == 200
    assert "is in the past" in str(response.context["adminform"].form.errors)


def test_the_schedule_timeline_shows_the_days_activities_as_blocks(verified_client, conversation, clock):
    day = clock.now().date()
    start = dt.datetime.combine(day, dt.time(6), tzinfo=dt.UTC)
    ScheduleEntry.objects.create(
        agent=conversation.agent,
        activity="Milking",
        start=start,
        end=start + dt.timedelta(hours=6),
        responsiveness=40,
        created=clock.now(),
    )
    ScheduleEntry.objects.create(
        agent=conversation.agent,
        activity="Sleeping",
        start=start - dt.timedelta(hours=8),
        end=start,
        responsiveness=0,
        created=clock.now(),
    )
    url = reverse("admin:memory_scheduleentry_timeline", args=[conversation.agent.pk]) + f"?day={day}"
    page = verified_client.get(url).content.decode()

    assert 'style="left: 25.0%; width: 25.0%;"' in page  # 06:00-12:00
    assert 'class="cindy-block asleep" style="left: 0.0%; width: 25.0%;"' in page  # from midnight
    assert "Milking" in page and "06:00–12:00" in page


def test_a_library_upload_in_the_admin_is_previewed_and_sendable(
    verified_client, conversation, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    upload = SimpleUploadedFile("goat.png", PNG, content_type="image/png")
    response = verified_client.post(
        reverse("admin:media_catalog_libraryitem_add"),
        {"agent": conversation.agent.pk, "description": "A goat on a hill", "upload": upload},
    )
    assert response.status_code == 302
    item = LibraryItem.objects.get()
    assert (item.description, item.kind) == ("A goat on a hill", "photo")

    listing = verified_client.get(reverse("admin:media_catalog_libraryitem_changelist")).content.decode()
    preview = reverse("admin:media_catalog_libraryitem_file", args=[item.pk])
    assert f'<img src="{preview}"' in listing
    image = verified_client.get(preview)
    assert image["Content-Type"] == "image/png" and b"".join(image.streaming_content) == PNG


def test_the_schedule_admin_refuses_an_entry_that_overlaps_another(verified_client, conversation, clock):
    start = dt.datetime(2030, 4, 1, 8, tzinfo=dt.UTC)
    milking = ScheduleEntry.objects.create(
        agent=conversation.agent,
        entry_id="act-milking",
        activity="Milking",
        start=start,
        end=start + dt.timedelta(hours=4),
        responsiveness=40,
        created=clock.now(),
    )
    url = reverse("admin:memory_scheduleentry_add")
    form = {
        "agent": conversation.agent.pk,
        "entry_id": "act-market",
        "activity": "Market",
        "description": "",
        "responsiveness": 60,
        "created_0": "2030-03-01",
        "created_1": "08:00:00",
    }

    overlapping = {
        **form,
        "start_0": "2030-04-01",
        "start_1": "11:00:00",
        "end_0": "2030-04-01",
        "end_1": "13:00:00",
    }
    page = verified_client.post(url, overlapping).content.decode()
    assert "overlaps &quot;Milking&quot; (act-milking, 2030-04-01 08:00-12:00)" in page
    assert not ScheduleEntry.objects.filter(entry_id="act-market").exists()

    backwards = {
        **form,
        "start_0": "2030-04-01",
        "start_1": "15:00:00",
        "end_0": "2030-04-01",
        "end_1": "14:00:00",
    }
    assert "before it starts" in verified_client.post(url, backwards).content.decode()

    touching = {
        **form,
        "start_0": "2030-04-01",
        "start_1": "12:00:00",
        "end_0": "2030-04-01",
        "end_1": "13:00:00",
    }
    assert verified_client.post(url, touching).status_code == 302
    assert ScheduleEntry.objects.filter(entry_id="act-market").exists()

    # Editing an entry does not make it clash with itself.
    change = reverse("admin:memory_scheduleentry_change", args=[milking.pk])
    edit = {**form, "entry_id": "act-milking", "activity": "Milking", "start_0": "2030-04-01", "start_1": "07:00:00",
            "end_0": "2030-04-01", "end_1": "12:00:00"}  # fmt: skip
    assert verified_client.post(change, edit).status_code == 302
