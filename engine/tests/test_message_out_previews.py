"""The activity stream names a message without text by its media: a sticker by its set and name, a
photo by its curated description, a voice note by its length (never by its file id)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from cindy_site.testing.audio import voice_note
from conversations.models import ActivityEvent
from engine.tests.cast import teach
from engine.tests.harness import tasks
from media_catalog.models import Sticker, StickerSet
from media_catalog.services.library import library_item_upload
from sandbox.services.chats import sandbox_say
from sandbox.services.voice import sandbox_voice_part

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _sent_summaries(agent) -> list[str]:
    return list(
        ActivityEvent.objects.filter(agent=agent, kind=ActivityEvent.Kind.MESSAGE_OUT)
        .order_by("id")
        .values_list("summary", flat=True)
    )


def test_a_sent_sticker_is_named_by_its_set_and_name(agent, harness, fake_llm):
    forest = StickerSet.objects.create(short_name="ForestFriends", title="Forest friends")
    Sticker.objects.create(sticker_set=forest, name="🌰", unique_id="acorn-1", document_id=1, access_hash=2)
    agent.sticker_set_names = ["ForestFriends"]
    agent.save()
    fake_llm.reply_with(tasks({"kind": "sticker", "sticker_set": "ForestFriends", "name": "🌰"}))
    sandbox_say(agent=agent, text="hi")
    harness.settle()

    assert _sent_summaries(agent) == [f"{agent.name}: sticker ForestFriends 🌰"]


def test_a_sent_photo_is_named_by_its_curated_description(agent, harness, fake_llm, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    teach(agent, "Task-Photo")  # the prompt that teaches send_media
    upload = SimpleUploadedFile("boat.png", PNG, content_type="image/png")
    boat = library_item_upload(agent_id=agent.pk, upload=upload, description="A narrowboat by a lock")
    fake_llm.reply_with(tasks({"kind": "send_media", "unique_id": boat.unique_id}))
    sandbox_say(agent=agent, text="show me a boat")
    harness.settle()

    assert _sent_summaries(agent) == [f"{agent.name}: photo A narrowboat by a lock"]


def test_a_received_voice_note_reads_as_a_voice_note_and_its_length(
    agent, harness, fake_llm, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    part = sandbox_voice_part(voice_note(7.2), name="note.ogg")
    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, as_name="Ann", media=[part])
    harness.settle()

    [line] = ActivityEvent.objects.filter(agent=agent, kind=ActivityEvent.Kind.MESSAGE_IN).values_list(
        "summary", flat=True
    )
    assert line == "Ann: voice note, 0:07"
    assert part["unique_id"] not in line
