"""send_media (alias photo): the media library in the prompt, sending by unique id, and refusals."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from conversations.models import ActivityEvent, Message
from conversations.transport.base import LibraryRef
from dashboard.selectors import sandbox_message_row
from engine.tests.cast import teach
from engine.tests.harness import tasks
from llm.models import LLMCall
from media_catalog.models import LibraryItem, MediaDescription
from media_catalog.services.library import (
    library_item_save,
    library_item_sent_as,
    library_item_upload,
    library_sync_saved,
)
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _taught(agent):
    """The agent has the shipped prompt that teaches this kind."""
    return teach(agent, "Task-Photo")


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def cat(agent, media_root) -> LibraryItem:
    upload = SimpleUploadedFile("cat.png", PNG, content_type="image/png")
    return library_item_upload(agent_id=agent.pk, upload=upload, description="A ginger cat asleep on bread")


@pytest.mark.parametrize("kind", ["send_media", "photo"])
def test_send_media_sends_the_library_item_and_the_sandbox_chat_shows_it(agent, harness, fake_llm, cat, kind):
    fake_llm.reply_with(tasks({"kind": kind, "unique_id": cat.unique_id}))
    sandbox_say(agent=agent, text="show me your cat")
    harness.settle()

    prompt = json.dumps(fake_llm.requests[0].json, ensure_ascii=False)
    assert "# Media Library" in prompt
    assert f"- {cat.unique_id} (photo) - ‹A ginger cat asleep on bread›" in prompt
    sent = SandboxMessage.objects.filter(sender__agent=agent).get()
    assert sent.media[0]["media_kind"] == "photo" and sent.media[0]["unique_id"] == cat.unique_id
    assert sent.media[0]["file"].startswith("sandbox/")
    shown = sandbox_message_row(sent)["media"][0]  # what the sandbox chat page draws
    assert shown["media_kind"] == "photo" and shown["url"].startswith("/")
    mirrored = Message.objects.get(is_agent=True)
    assert mirrored.media[0]["unique_id"] == cat.unique_id


def test_an_unknown_media_id_is_refused(agent, harness, fake_llm, cat):
    fake_llm.reply_with(tasks({"kind": "send_media", "unique_id": "nope"}, {"kind": "send", "text": "oops"}))
    sandbox_say(agent=agent, text="show me a dog")
    harness.settle()

    assert sandbox_transcript(agent=agent)[1:] == ["Wendy: oops"]
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert "'nope' is not in agent Wendy's media library" in refusal.summary


def test_another_agents_library_item_is_refused(agent, other_agent, harness, fake_llm, media_root):
    upload = SimpleUploadedFile("dog.png", PNG + b"dog", content_type="image/png")
    theirs = library_item_upload(agent_id=other_agent.pk, upload=upload, description="Heidi's dog")
    fake_llm.reply_with(tasks({"kind": "send_media", "unique_id": theirs.unique_id}))
    sandbox_say(agent=agent, text="show me Heidi's dog")
    harness.settle()

    assert ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED).exists()
    assert not SandboxMessage.objects.filter(sender__agent=agent).exists()


def test_the_same_upload_again_keeps_one_item_and_updates_its_description(agent, cat):
    again = SimpleUploadedFile("cat-copy.png", PNG, content_type="image/png")
    item = library_item_upload(agent_id=agent.pk, upload=again, description="The bakery cat")
    assert item.pk == cat.pk
    assert LibraryItem.objects.get().description == "The bakery cat"


def test_a_saved_messages_refresh_adds_new_items_and_drops_gone_ones_keeping_descriptions(agent, cat):
    library_sync_saved(agent_id=agent.pk, saved=[LibraryRef("111", "photo", saved_message_id=5)])
    LibraryItem.objects.filter(unique_id="111").update(description="Sunset over the harbour")
    added, removed = library_sync_saved(
        agent_id=agent.pk,
        saved=[
            LibraryRef("111", "photo", saved_message_id=9),
            LibraryRef("222", "video", saved_message_id=10),
        ],
    )
    assert (added, removed) == (1, 0)
    kept = LibraryItem.objects.get(unique_id="111")
    assert (kept.description, kept.saved_message_id) == ("Sunset over the harbour", 9)
    assert library_sync_saved(agent_id=agent.pk, saved=[]) == (0, 2)
    assert list(LibraryItem.objects.values_list("unique_id", flat=True)) == [cat.unique_id]  # uploads stay


@pytest.mark.parametrize("described_before", [False, True])
def test_a_curated_library_photo_keeps_its_description_when_the_agent_sends_it(
    agent, harness, fake_llm, media_root, described_before
):
    upload = SimpleUploadedFile("cat.png", PNG, content_type="image/png")
    if described_before:  # someone sent the same picture before, and the AI described it
        MediaDescription.objects.create(
            unique_id=library_item_upload(agent_id=agent.pk, upload=upload).unique_id,
            kind="photo",
            description="An orange animal on a loaf",
            source=MediaDescription.Source.AI,
        )
        upload.seek(0)
    cat = library_item_upload(agent_id=agent.pk, upload=upload, description="A ginger cat asleep on bread")
    fake_llm.reply_with(tasks({"kind": "send_media", "unique_id": cat.unique_id}))
    sandbox_say(agent=agent, text="show me your cat")
    harness.settle()
    fake_llm.reply_with(tasks({"kind": "send", "text": "That's Marmalade."}))
    sandbox_say(agent=agent, text="what's its name?")
    harness.settle()

    assert not LLMCall.objects.filter(purpose=LLMCall.Purpose.DESCRIBE).exists()
    description = MediaDescription.objects.get(unique_id=cat.unique_id)
    assert (description.description, description.is_curated) == ("A ginger cat asleep on bread", True)
    history = json.dumps(fake_llm.requests[-1].json["contents"], ensure_ascii=False)
    assert "A ginger cat asleep on bread" in history and "An orange animal" not in history


def test_editing_a_library_items_description_curates_its_media(agent, media_root):
    upload = SimpleUploadedFile("cat.png", PNG, content_type="image/png")
    item = library_item_upload(agent_id=agent.pk, upload=upload)
    assert not MediaDescription.objects.filter(unique_id=item.unique_id).exists()
    item.description = "A ginger cat, now curated"
    library_item_save(item=item)
    description = MediaDescription.objects.get(unique_id=item.unique_id)
    assert (description.description, description.is_curated) == ("A ginger cat, now curated", True)


def test_an_uploaded_item_sent_under_a_new_media_id_keeps_its_curated_description(agent, cat):
    """On Telegram an admin upload goes out as a new photo: that photo is described as the item is."""
    library_item_sent_as(agent_id=agent.pk, unique_id=cat.unique_id, sent_unique_id="5551234")
    row = MediaDescription.objects.get(unique_id="5551234")
    assert row.description == "A ginger cat asleep on bread" and row.is_curated
    assert LibraryItem.objects.filter(agent=agent).count() == 1  # the library itself is unchanged
