"""image: the agent makes a picture (Gemini image output through the real google-genai client against
the stand-in server), keeps it in its library, sends it once as a photo with a caption, within its
daily limit and never after reading untrusted text unless an operator allows it."""

from __future__ import annotations

import base64
import io
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from conversations.models import ActivityEvent, NodeStatus, TaskNode
from dashboard.transcript import conversation_transcript
from engine.handlers.base import HandlerContext
from engine.handlers.image import handle_image
from engine.tests.cast import teach
from engine.tests.harness import tasks
from llm.models import LLMCall
from llm.tests import local_site
from media_catalog.models import LibraryItem, MediaDescription
from media_catalog.services.library import library_item_upload
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db

site = local_site.site  # the shared local web site fixture

SKETCH = "A pencil sketch of a lighthouse at dusk, gulls over the rocks"


def png(colour: str, size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def opens(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        image.verify()
        return image.size


@pytest.fixture(autouse=True)
def _taught(agent):
    return teach(agent, "Task-Photo", "Task-Image")


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def harbour(agent, media_root) -> LibraryItem:
    upload = SimpleUploadedFile("harbour.png", png("teal"), content_type="image/png")
    return library_item_upload(agent_id=agent.pk, upload=upload, description="The harbour wall at noon")


def picture_reply(fake_llm, colour: str = "navy") -> bytes:
    data = png(colour, (96, 64))
    fake_llm.reply_with(
        None, input_tokens=300, output_tokens=1290, images=((data, "image/png"),), image_tokens=1290
    )
    return data


def image_requests(fake_llm):
    return [
        r
        for r in fake_llm.requests
        if "IMAGE" in (r.json.get("generationConfig") or {}).get("responseModalities", [])
    ]


def test_an_image_task_makes_a_picture_sends_it_with_its_caption_and_keeps_it_in_the_library(
    agent, harness, fake_llm, harbour, media_root
):
    fake_llm.reply_with(
        tasks({"kind": "image", "description": SKETCH, "text": "For you.", "references": [harbour.unique_id]})
    )
    made = picture_reply(fake_llm)
    sandbox_say(agent=agent, text="draw me the lighthouse")
    harness.settle()

    (request,) = image_requests(fake_llm)
    assert request.model == "gemini-2.5-flash-image"
    parts = request.json["contents"][-1]["parts"]
    assert parts[0]["text"] == SKETCH
    assert base64.b64decode(parts[1]["inlineData"]["data"]) == harbour.file.open("rb").read()
    sent = SandboxMessage.objects.filter(sender__agent=agent).get()
    assert sent.text == "For you." and sent.media[0]["media_kind"] == "photo"
    shown = (media_root / sent.media[0]["file"]).read_bytes()
    assert shown == made and opens(shown) == (96, 64)
    item = LibraryItem.objects.get(agent=agent, description=SKETCH)
    assert sent.media[0]["unique_id"] == item.unique_id and item.kind == "photo" and item.mime == "image/png"
    catalog = MediaDescription.objects.get(unique_id=item.unique_id)
    assert catalog.is_curated and catalog.description == SKETCH
    call = LLMCall.objects.get(purpose=LLMCall.Purpose.IMAGE)
    assert (call.status, call.image_output_tokens, call.output_tokens) == ("ok", 1290, 1290)
    # 300 input tokens at 0.30 and 1290 image output tokens at 30.00 USD per million (the seeded price).
    assert call.cost == Decimal("0.038790")

    fake_llm.reply_with(tasks({"kind": "send_media", "unique_id": item.unique_id}))
    sandbox_say(agent=agent, text="send it again please")
    harness.settle()
    again = SandboxMessage.objects.filter(sender__agent=agent).order_by("message_id").last()
    assert again.pk != sent.pk and again.media[0]["unique_id"] == item.unique_id
    assert len(image_requests(fake_llm)) == 1


def test_a_retried_send_of_the_picture_never_duplicates_it(agent, harness, fake_llm, media_root):
    fake_llm.reply_with(tasks({"kind": "image", "description": SKETCH, "text": "Once."}))
    picture_reply(fake_llm)
    sandbox_say(agent=agent, text="draw")
    harness.settle()
    node = TaskNode.objects.get(kind="image", status=NodeStatus.DONE)
    assert node.random_id is not None
    # The gateway runs the node again (a lease expired after Telegram took the send): same random_id.
    node.status, node.lease_owner = NodeStatus.RUNNING, "again"
    node.save(update_fields=["status", "lease_owner"])
    transport = harness.gateway.clients[agent.pk].transport
    ctx = HandlerContext(
        node=node, agent=agent, conversation=node.conversation, transport=transport, owner="again"
    )
    async_to_sync(handle_image)(ctx)

    assert SandboxMessage.objects.filter(sender__agent=agent).count() == 1


def test_the_picture_past_the_daily_limit_is_refused_with_a_note_and_no_image_call(
    agent, harness, fake_llm, media_root, settings
):
    settings.CINDY_IMAGES_PER_DAY = 1
    fake_llm.reply_with(
        tasks(
            {"kind": "image", "description": SKETCH},
            {"kind": "image", "description": "The same lighthouse at dawn"},
            {"kind": "send", "text": "One will do for today."},
        )
    )
    picture_reply(fake_llm)
    sandbox_say(agent=agent, text="draw two")
    harness.settle()

    assert len(image_requests(fake_llm)) == 1
    assert [m.text for m in SandboxMessage.objects.filter(sender__agent=agent).order_by("message_id")] == [
        "",
        "One will do for today.",
    ]
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert "already made 1 picture(s) today and CINDY_IMAGES_PER_DAY allows 1" in refusal.summary
    received = TaskNode.objects.filter(kind="received").order_by("pk").last()
    assert any("CINDY_IMAGES_PER_DAY" in line for line in received.result["refused"])
    # The conversation's log (messages and task log) shows the picture made and the refusal.
    log = conversation_transcript(received.conversation)
    assert [e["text"] for e in log if e.get("kind") == "image"] == [SKETCH]
    assert [e["kind"] for e in log if "CINDY_IMAGES_PER_DAY" in (e.get("text") or "")] == ["policy_refused"]

    fake_llm.reply_with(
        tasks({"kind": "image", "description": "A gull"}, {"kind": "send", "text": "Tomorrow."})
    )
    sandbox_say(agent=agent, text="and a gull?")
    harness.settle()
    assert len(image_requests(fake_llm)) == 1  # the next turn of the day is refused too, with no call
    assert not LibraryItem.objects.filter(description="A gull").exists()


@pytest.mark.parametrize("allowed", [False, True])
def test_a_turn_that_read_a_web_page_makes_no_picture_unless_an_operator_allows_it(
    agent, harness, fake_llm, media_root, settings, site, allowed
):
    settings.CINDY_RETRIEVAL_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.CINDY_IMAGES_AFTER_UNTRUSTED = allowed
    teach(agent, "Task-Retrieve")
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": [f"{site}/page"]}))
    fake_llm.reply_with(tasks({"kind": "image", "description": SKETCH}, {"kind": "send", "text": "Read it."}))
    if allowed:
        picture_reply(fake_llm)
    sandbox_say(agent=agent, text="read this page and draw what it says")
    harness.settle()

    assert len(image_requests(fake_llm)) == int(allowed)
    assert LibraryItem.objects.filter(description=SKETCH).exists() == allowed
    refusals = list(ActivityEvent.objects.filter(kind=ActivityEvent.Kind.POLICY_REFUSED))
    if allowed:
        assert refusals == []
    else:
        (refusal,) = refusals
        assert "read text from outside the chat (1 retrieved web page)" in refusal.summary
        assert "CINDY_IMAGES_AFTER_UNTRUSTED" in refusal.summary
    assert SandboxMessage.objects.filter(sender__agent=agent, text="Read it.").exists()


def test_a_reply_without_a_picture_drops_the_task_and_the_turn_goes_on(agent, harness, fake_llm, media_root):
    fake_llm.reply_with(tasks({"kind": "image", "description": SKETCH}, {"kind": "send", "text": "Here."}))
    fake_llm.reply_with("I would rather not draw that.")
    sandbox_say(agent=agent, text="draw")
    harness.settle()

    assert [m.text for m in SandboxMessage.objects.filter(sender__agent=agent)] == ["Here."]
    assert not LibraryItem.objects.filter(description=SKETCH).exists()
    received = TaskNode.objects.get(kind="received")
    assert any(
        "image: no picture was made" in e and "sent no picture" in e for e in received.result["errors"]
    )


def test_a_reference_outside_the_agents_library_is_refused(agent, harness, fake_llm, media_root):
    fake_llm.reply_with(
        tasks(
            {"kind": "image", "description": SKETCH, "references": ["libnothere"]},
            {"kind": "send", "text": "Hm."},
        )
    )
    sandbox_say(agent=agent, text="draw")
    harness.settle()

    assert image_requests(fake_llm) == []
    refusal = ActivityEvent.objects.get(kind=ActivityEvent.Kind.POLICY_REFUSED)
    assert "libnothere: not in agent Wendy's media library" in refusal.summary
