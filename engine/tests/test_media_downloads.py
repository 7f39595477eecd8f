"""The gateway downloads received media into the media store before planning, within a budget."""

from __future__ import annotations

import json

import pytest

from conversations.models import Message
from conversations.services.ingest import message_upsert
from conversations.transport.base import InboundMessage, MediaItem, TransportError
from engine.tests.cast import make_agent
from engine.tests.harness import Harness
from media_catalog.models import MediaDescription
from sandbox.services.chats import sandbox_say
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n fake image bytes"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "uploads").mkdir()
    return tmp_path


def say_photo(agent, media_root, unique_id: str, *, text: str = ""):
    source = media_root / "uploads" / f"{unique_id}.png"
    source.write_bytes(PNG)
    part = {
        "kind": "media",
        "media_kind": "photo",
        "unique_id": unique_id,
        "mime": "image/png",
        "path": str(source),
    }
    return sandbox_say(agent=agent, text=text, media=[part])


def part_of(unique_id: str) -> dict:
    message = next(m for m in Message.objects.all() if any(p.get("unique_id") == unique_id for p in m.media))
    return next(p for p in message.media if p.get("unique_id") == unique_id)


def test_a_received_photo_is_stored_and_described_before_planning(agent, clock, fake_llm, media_root):
    fake_llm.reply_with("A cat asleep on a keyboard.")
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "cute"}]))
    harness = Harness(clock)
    harness.start()
    say_photo(agent, media_root, "PH-1", text="look")

    harness.ingest()
    assert harness.step("media") is True
    harness.settle()  # the received node is due after its short delay; planning reads the mirror

    part = part_of("PH-1")
    assert part["file"] == "media_store/PH-1.png"
    assert (media_root / "media" / "media_store" / "PH-1.png").read_bytes() == PNG
    described = MediaDescription.objects.get(unique_id="PH-1")
    assert (described.status, described.description) == ("ok", "A cat asleep on a keyboard.")
    plan_request = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "A cat asleep on a keyboard." in plan_request


def test_media_stored_after_the_media_step_is_downloaded_before_its_node_is_planned(
    agent, clock, fake_llm, media_root
):
    """An unread scan stores messages in a task of its own, e.g. between a pass's media step and its
    tick: the tick downloads their media before it hands their nodes to the workers."""
    fake_llm.reply_with("A red square that bounces.")
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "ha"}]))
    harness = Harness(clock)
    harness.start()
    say_photo(agent, media_root, "PH-late", text="me on mondays")

    harness.settle()  # ingest, tick and workers only: no media step of its own

    assert part_of("PH-late")["file"] == "media_store/PH-late.png"
    assert MediaDescription.objects.get(unique_id="PH-late").description == "A red square that bounces."
    plan_request = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "A red square that bounces." in plan_request


def test_downloads_per_pass_are_capped_by_the_budget(agent, clock, media_root, settings):
    settings.MEDIA_DESC_BUDGET_PER_TICK = 1
    harness = Harness(clock)
    harness.start()
    say_photo(agent, media_root, "A1")
    say_photo(agent, media_root, "A2")
    harness.ingest()

    harness.step("media")
    assert "file" in part_of("A1") and "file" not in part_of("A2")
    harness.step("media")
    assert part_of("A2")["file"] == "media_store/A2.png"
    assert harness.step("media") is False


def test_media_with_a_usable_description_is_not_downloaded(agent, clock, media_root):
    MediaDescription.objects.create(unique_id="C1", source="curated", status="curated", description="a wave")
    harness = Harness(clock)
    harness.start()
    say_photo(agent, media_root, "C1")
    harness.ingest()

    assert harness.step("media") is False
    assert "file" not in part_of("C1")
    assert not (media_root / "media" / "media_store" / "C1.png").exists()


class BrokenDownloads(SandboxTransport):
    async def download_media(self, peer_id, message_id, dest_dir):
        raise OSError("disk full")


def test_a_failed_download_is_recorded_and_planning_goes_ahead(agent, clock, fake_llm, media_root):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "what is it?"}]))
    harness = Harness(
        clock, transport_factory=lambda a, gateway_id="": BrokenDownloads(a, gateway_id=gateway_id)
    )
    harness.start()
    say_photo(agent, media_root, "B1")
    harness.ingest()
    harness.step("media")

    assert part_of("B1")["download_error"] == "OSError: disk full"
    harness.settle()
    assert Message.objects.filter(is_agent=True, text="what is it?").exists()
    assert harness.step("media") is False  # not retried on every pass


def test_a_downloaded_file_survives_a_redelivery_of_the_message(agent, clock, media_root):
    harness = Harness(clock)
    harness.start()
    sent = say_photo(agent, media_root, "R1", text="v1")
    harness.ingest()
    harness.step("media")
    message = Message.objects.get(message_id=sent.message_id)
    record = InboundMessage(
        peer_id=message.conversation.peer_id,
        chat_kind="dm",
        message_id=message.message_id,
        date=message.date,
        sender_id=message.sender_id,
        text="v2",
        media=(MediaItem(media_kind="photo", unique_id="R1", mime="image/png"),),
    )
    message_upsert(agent=agent, record=record, edited=True)
    assert part_of("R1")["file"] == "media_store/R1.png"


class FlakyDownloads(SandboxTransport):
    """Its connection drops during the first download."""

    drops = 1

    async def download_media(self, peer_id, message_id, dest_dir):
        if FlakyDownloads.drops:
            FlakyDownloads.drops -= 1
            raise TransportError("connection reset during download")
        return await super().download_media(peer_id, message_id, dest_dir)


def test_a_dropped_connection_during_a_download_is_retried_on_a_later_pass(agent, clock, media_root):
    FlakyDownloads.drops = 1
    harness = Harness(
        clock, transport_factory=lambda a, gateway_id="": FlakyDownloads(a, gateway_id=gateway_id)
    )
    harness.start()
    say_photo(agent, media_root, "F1")
    harness.ingest()
    harness.step("media")
    assert "download_error" not in part_of("F1") and "file" not in part_of("F1")

    harness.step("media")
    assert part_of("F1")["file"].startswith("media_store/F1")


def test_a_video_past_the_cap_is_not_downloaded_and_the_prompt_says_so(
    agent, clock, fake_llm, media_root, settings
):
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 10
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "I'll watch it later"}]))
    source = media_root / "uploads" / "LONG.mp4"
    source.write_bytes(b"\x00\x00\x00\x18ftypmp42 fake video")
    part = {"kind": "media", "media_kind": "video", "unique_id": "LONG", "mime": "video/mp4", "duration": 720}
    sandbox_say(agent=agent, text="our holiday", media=[{**part, "path": str(source)}])
    harness = Harness(clock)
    harness.start()

    harness.ingest()
    assert harness.step("media") is False
    harness.settle()

    assert "file" not in part_of("LONG") and not MediaDescription.objects.exists()
    assert [
        r
        for r in fake_llm.requests
        if "generateContent" in r.path and "Channel Details" not in json.dumps(r.json)
    ] == []
    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert "‹a video of 12 min: too long to describe›" in prompt


def test_a_received_animated_sticker_is_described_from_frames_before_planning(
    agent, clock, fake_llm, media_root
):
    from cindy_site.testing.mtproto.media import tgs_bytes

    fake_llm.reply_with("A red square slides across.")
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "ha"}]))
    source = media_root / "uploads" / "TGS-1.tgs"
    source.write_bytes(tgs_bytes())
    part = {
        "kind": "media",
        "media_kind": "sticker",
        "unique_id": "TGS-1",
        "mime": "application/x-tgsticker",
        "sticker_format": "animated",
        "sticker_set_name": "SlideSet",
        "sticker_name": "🟥",
        "path": str(source),
    }
    sandbox_say(agent=agent, media=[part])
    harness = Harness(clock)
    harness.start()

    harness.ingest()
    assert harness.step("media") is True
    harness.settle()

    assert part_of("TGS-1")["file"] == "media_store/TGS-1.tgs"
    describe = fake_llm.requests[0].json["contents"][0]["parts"]
    assert {p["inlineData"]["mime_type"] for p in describe[1:]} == {"image/png"}
    plan_request = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert (
        "‹the sticker 🟥 from the set SlideSet that appears as A red square slides across.›" in plan_request
    )


def test_new_messages_without_media_move_the_cursor_with_no_scan_and_media_sends_the_agent_to_the_scan(
    agent, clock, media_root
):
    from engine.media import media_agents_with_news

    harness = Harness(clock)
    harness.start()
    sandbox_say(agent=agent, text="plain words")
    harness.ingest()
    plain = Message.objects.filter(text="plain words").get()

    assert media_agents_with_news(cursors={agent.pk: 0}) == ({agent.pk: plain.pk}, plain.pk)
    assert media_agents_with_news(cursors={agent.pk: plain.pk}) == ({}, plain.pk)

    say_photo(agent, media_root, "ph-news")
    harness.ingest()

    assert media_agents_with_news(cursors={agent.pk: plain.pk}).agents == {agent.pk: None}


def test_an_agent_without_messages_does_not_hold_the_media_read_at_the_start(agent, clock, media_root):
    """Its cursor starts at 0 and it never appears among the agents with news; were it left there,
    every later read would take every message stored since (in a long-running gateway, all of them)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    quiet = make_agent("Quiet", phone="+15550000077")
    harness = Harness(clock)
    harness.start()
    step = harness.gateway.steps["media"]
    sandbox_say(agent=agent, text="first words")
    harness.ingest()
    first = Message.objects.filter(text="first words").get()
    harness.step("media")
    assert step.cursors == {agent.pk: first.pk, quiet.pk: first.pk}

    sandbox_say(agent=agent, text="second words")
    harness.ingest()
    second = Message.objects.filter(text="second words").get()
    with CaptureQueriesContext(connection) as queries:
        harness.step("media")
    read = next(q["sql"] for q in queries.captured_queries if "GROUP BY" in q["sql"])
    # Only the messages after the first are read (the lowest cursor), up to the newest.
    assert f"m.id > {first.pk} AND m.id <= {second.pk}" in read
    assert step.cursors == {agent.pk: second.pk, quiet.pk: second.pk}


def test_a_tick_that_downloaded_media_before_its_dispatch_does_not_settle_the_pass(
    agent, clock, media_root, settings
):
    """The media step the tick runs before its dispatch has a budget per pass: once it downloaded
    anything, a pass right after it carries on with what the budget left (`Gateway.settled`)."""
    settings.CINDY_READ_DELAY_SECONDS = 0
    harness = Harness(clock)
    harness.start()
    tick = harness.gateway.steps["tick"]
    say_photo(agent, media_root, "ph-settle")
    harness.ingest()
    assert harness.tick()
    assert part_of("ph-settle").get("file")  # downloaded before the turn was handed over
    assert len(harness.queued) == 1 and tick.only_planned is False

    other = make_agent("Olive", phone="+15550000078")
    harness.start()
    sandbox_say(agent=other, text="only words")
    harness.ingest()
    assert harness.tick()
    assert len(harness.queued) == 2 and tick.only_planned is True
