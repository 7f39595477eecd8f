"""Animated (TGS) stickers are described from rendered frames; long videos are not described at all."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from cindy_site.testing.mtproto.media import tgs_bytes
from conversations.models import Message
from llm.conversation import render_media
from llm.media import warm_media_descriptions
from llm.media_caps import video_too_long
from llm.media_tgs import TgsRenderError, frame_indices, tgs_frames
from llm.models import LLMCall
from llm.tests.conftest import add_message
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


def _sticker(
    dm, message_id, unique_id, data: bytes, *, media_root, mime="application/x-tgsticker"
) -> Message:
    (media_root / "chat" / f"{unique_id}.tgs").write_bytes(data)
    part = {
        "kind": "media",
        "media_kind": "sticker",
        "unique_id": unique_id,
        "mime": mime,
        "sticker_set_name": "SlideSet",
        "sticker_name": "🟥",
        "sticker_format": "animated",
        "file": f"chat/{unique_id}.tgs",
    }
    return add_message(dm, message_id, media=[part])


def _video(dm, message_id, unique_id, seconds, *, media_root=None, round_=False) -> Message:
    part = {
        "kind": "media",
        "media_kind": "video",
        "unique_id": unique_id,
        "mime": "video/mp4",
        "duration": seconds,
    }
    if round_:
        part["extra"] = {"round": True}
    if media_root is not None:
        (media_root / "chat" / f"{unique_id}.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 fake video")
        part["file"] = f"chat/{unique_id}.mp4"
    return add_message(dm, message_id, media=[part])


def _dark_box(png: bytes) -> tuple[int, int, int, int] | None:
    image = Image.open(io.BytesIO(png)).convert("L").point(lambda v: 255 if v < 200 else 0)
    return image.getbbox()


def test_frames_are_spread_over_the_animation_on_white():
    frames = tgs_frames(tgs_bytes(frames=30), count=4, size=128)

    assert len(frames) == 4
    boxes = [_dark_box(f) for f in frames]
    assert all(boxes) and [b[0] for b in boxes] == sorted(b[0] for b in boxes)  # the square slides right
    assert len({b[0] for b in boxes}) == 4
    first = Image.open(io.BytesIO(frames[0]))
    assert first.mode == "RGB" and first.getpixel((0, 0)) == (255, 255, 255)


def test_frame_indices_cover_first_and_last_without_repeats():
    assert frame_indices(31, 4) == [0, 10, 20, 30]
    assert frame_indices(2, 4) == [0, 1]
    assert frame_indices(10, 1) == [0]
    assert frame_indices(0, 4) == []


def test_a_file_that_is_not_an_animation_is_refused_by_name():
    with pytest.raises(TgsRenderError, match="not a Lottie animation"):
        tgs_frames(b'{"v": "5.5.2"}', count=4)
    with pytest.raises(TgsRenderError, match="too large"):
        tgs_frames(b"\x1f\x8b" + b"x" * (2 * 1024 * 1024), count=4)


def test_an_animated_sticker_is_described_from_its_frames(dm, fake_llm, media_root, settings):
    settings.MEDIA_TGS_FRAMES = 3
    fake_llm.reply_with("A red square slides from left to right.")
    message = _sticker(dm, 1, "TGS1", tgs_bytes(), media_root=media_root)

    assert warm_media_descriptions([message], agent_id=dm.agent_id, conversation_id=dm.pk) == 1

    row = MediaDescription.objects.get(unique_id="TGS1")
    assert (row.status, row.description, row.kind) == (
        "ok",
        "A red square slides from left to right.",
        "sticker",
    )
    assert row.mime == "application/x-tgsticker"
    parts = fake_llm.requests[0].json["contents"][0]["parts"]
    assert "3 images are frames" in parts[0]["text"]
    images = [p["inlineData"] for p in parts[1:]]
    assert [i["mime_type"] for i in images] == ["image/png"] * 3
    assert all(base64.b64decode(i["data"]).startswith(b"\x89PNG") for i in images)
    assert not any("x-tgsticker" in str(p) for p in parts)  # the Lottie file itself is never sent
    call = LLMCall.objects.get()
    assert call.purpose == "describe" and call.conversation_id == dm.pk
    assert "that appears as A red square slides" in render_media(MediaItem.from_part(message.media[0]), row)


def test_an_animated_sticker_is_recognised_by_its_bytes_when_the_mime_is_missing(dm, fake_llm, media_root):
    fake_llm.reply_with("A sliding square.")
    message = _sticker(dm, 1, "TGS2", tgs_bytes(), media_root=media_root, mime="")
    message.media[0].pop("sticker_format")
    Message.objects.filter(pk=message.pk).update(media=message.media)

    warm_media_descriptions([message])

    assert MediaDescription.objects.get(unique_id="TGS2").status == "ok"
    assert fake_llm.requests[0].json["contents"][0]["parts"][1]["inlineData"]["mime_type"] == "image/png"


def test_a_broken_animated_sticker_is_not_understood_without_a_call(dm, fake_llm, media_root):
    message = _sticker(dm, 1, "TGS3", b'{"not": "lottie"}', media_root=media_root)

    warm_media_descriptions([message])

    assert MediaDescription.objects.get(unique_id="TGS3").status == "not_understood"
    assert fake_llm.requests == []


def test_a_video_past_the_cap_gets_a_note_and_no_call(dm, fake_llm, media_root, settings):
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 10
    long_video = _video(dm, 1, "V1", 720, media_root=media_root)
    long_note = _video(dm, 2, "VN1", 360, media_root=media_root, round_=True)

    assert warm_media_descriptions([long_video, long_note]) == 0

    assert fake_llm.requests == [] and not MediaDescription.objects.exists()
    assert (
        render_media(MediaItem.from_part(long_video.media[0]), None)
        == "‹a video of 12 min: too long to describe›"
    )
    # A video note is heard: past the 5-minute transcription cap, not the video cap.
    assert "not transcribed, it is longer than the 5 min limit" in render_media(
        MediaItem.from_part(long_note.media[0]), None
    )
    assert (
        video_too_long(MediaItem.from_part({"media_kind": "video", "duration": 75, "extra": {"round": True}}))
        is None
    )


def test_a_video_within_the_cap_is_described(dm, fake_llm, media_root, settings):
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 10
    fake_llm.reply_with("A cat jumps onto a table.")
    short = _video(dm, 1, "V2", 8, media_root=media_root)

    assert warm_media_descriptions([short]) == 1

    assert MediaDescription.objects.get(unique_id="V2").description == "A cat jumps onto a table."
    assert video_too_long(MediaItem.from_part(short.media[0])) is None
    assert "too long" not in render_media(
        MediaItem.from_part(short.media[0]), MediaDescription.objects.get(unique_id="V2")
    )


def test_the_cap_follows_the_setting(settings):
    part = MediaItem(media_kind="video", duration=90)
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 60
    assert video_too_long(part) == "a video of 1 min: too long to describe"
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 120
    assert video_too_long(part) is None
    assert (
        video_too_long(MediaItem.from_part({"media_kind": "voice", "duration": 900})) is None
    )  # audio has its own cap
    assert video_too_long(MediaItem.from_part({"media_kind": "video"})) is None  # length unknown
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 10
    assert video_too_long(MediaItem.from_part({"media_kind": "animation", "duration": 3900})) == (
        "an animation of 1 h 5 min: too long to describe"
    )


def test_a_curated_description_of_a_long_video_still_shows(dm, settings):
    settings.MEDIA_VIDEO_MAX_DURATION_SECONDS = 10
    message = _video(dm, 1, "V3", 720)
    row = MediaDescription.objects.create(
        unique_id="V3", source="curated", status="curated", description="Our trip."
    )

    assert render_media(MediaItem.from_part(message.media[0]), row) == "‹a video that appears as Our trip.›"
