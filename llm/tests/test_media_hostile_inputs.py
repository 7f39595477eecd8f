"""Hostile voice notes and animated stickers reaching the media describer (a task worker): a gzip bomb,
a 100 MB sticker, a 6-minute voice note past the 5-minute cap (stated or not), zero-length and
mislabelled files. Each ends in a stored status and no LLM call; nothing is read whole that could not
be a sticker or a note, and the worker's memory stays small."""

from __future__ import annotations

import io
import tracemalloc
import zlib

import pytest
from PIL import Image

from cindy_site.testing.audio import voice_note
from llm.media import warm_media_descriptions
from llm.models import LLMCall
from llm.tests.conftest import add_message
from llm.transcription import render_audio
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem
from media_catalog.previews import MAX_TGS_BYTES

MB = 1024 * 1024


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


@pytest.fixture(scope="module")
def six_minutes() -> bytes:
    return voice_note(360.0)


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(out, format="PNG")
    return out.getvalue()


def _gzip_bomb(unpacked: int) -> bytes:
    """A gzip stream of `unpacked` bytes of JSON-looking filler, made without holding them."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    chunk = b" " * MB
    out = [packer.compress(b"[")]
    for _ in range(unpacked // MB):
        out.append(packer.compress(chunk))
    out.append(packer.compress(b"]") + packer.flush())
    return b"".join(out)


def _file(media_root, name: str, data: bytes = b"", *, size: int | None = None) -> str:
    path = media_root / "chat" / name
    path.write_bytes(data)
    if size is not None:
        with path.open("r+b") as handle:
            handle.truncate(size)  # sparse: a large file that costs no disk
    return f"chat/{name}"


def _sticker(dm, unique_id: str, file: str):
    part = {
        "kind": "media",
        "media_kind": "sticker",
        "unique_id": unique_id,
        "mime": "application/x-tgsticker",
        "sticker_format": "animated",
        "sticker_set_name": "BoomSet",
        "sticker_name": "💥",
        "file": file,
    }
    return add_message(dm, 1, media=[part])


def _voice(dm, unique_id: str, file: str, *, duration: float | None):
    part = {"kind": "media", "media_kind": "voice", "unique_id": unique_id, "mime": "audio/ogg", "file": file}
    if duration is not None:
        part["duration"] = duration
    return add_message(dm, 1, media=[part])


def _described(messages) -> tuple[MediaDescription, int]:
    """Describe under tracemalloc: (the stored row, the peak of Python allocations in bytes)."""
    tracemalloc.start()
    try:
        warm_media_descriptions(messages)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    unique_id = messages[0].media[0]["unique_id"]
    return MediaDescription.objects.get(unique_id=unique_id), peak


def test_a_gzip_bomb_sticker_is_refused_while_unpacking_with_little_memory(dm, fake_llm, media_root):
    bomb = _gzip_bomb(100 * MB)
    assert len(bomb) < MAX_TGS_BYTES  # small enough to pass for a sticker file
    message = _sticker(dm, "TGSBOMB", _file(media_root, "bomb.tgs", bomb))

    row, peak = _described([message])

    assert row.status == MediaDescription.Status.NOT_UNDERSTOOD
    assert fake_llm.requests == [] and not LLMCall.objects.exists()
    assert peak < 40 * MB


def test_a_100_mb_sticker_file_is_refused_without_being_read(dm, fake_llm, media_root, caplog):
    message = _sticker(dm, "TGSHUGE", _file(media_root, "huge.tgs", b"\x1f\x8b\x08\x00", size=100 * MB))

    row, peak = _described([message])

    assert row.status == MediaDescription.Status.NOT_UNDERSTOOD
    assert fake_llm.requests == [] and not LLMCall.objects.exists()
    assert peak < 10 * MB
    assert "is too large for a TGS sticker" in caplog.text


@pytest.mark.parametrize(("name", "data"), [("empty.tgs", b""), ("photo.tgs", _png())])
def test_an_empty_or_mislabelled_sticker_is_not_understood_without_a_call(
    dm, fake_llm, media_root, name, data
):
    message = _sticker(dm, f"TGS{len(data)}", _file(media_root, name, data))

    row, _ = _described([message])

    assert row.status == MediaDescription.Status.NOT_UNDERSTOOD
    assert fake_llm.requests == []


@pytest.mark.parametrize("stated", [None, 3.0], ids=["no-duration-stated", "understated"])
def test_a_six_minute_voice_note_is_measured_and_not_transcribed(
    dm, fake_llm, media_root, six_minutes, stated
):
    """Past the 5-minute cap by its own length, whatever the part states (the sender writes that)."""
    message = _voice(dm, "V6MIN", _file(media_root, "six.ogg", six_minutes), duration=stated)

    row, _ = _described([message])

    assert fake_llm.requests == [] and not LLMCall.objects.exists()
    assert row.status == MediaDescription.Status.UNSUPPORTED and row.duration == pytest.approx(360, abs=1)
    assert render_audio(MediaItem.from_part(message.media[0]), row, speaker="Alice") == (
        "‹a voice message from Alice, 6 min: not transcribed, it is longer than the 5 min limit›"
    )


@pytest.mark.parametrize(("name", "data"), [("empty.ogg", b""), ("photo.ogg", _png())], ids=["empty", "png"])
def test_an_empty_or_mislabelled_voice_note_is_not_understood_without_a_call(
    dm, fake_llm, media_root, name, data
):
    message = _voice(dm, f"V{len(data)}", _file(media_root, name, data), duration=3.0)

    row, _ = _described([message])

    assert row.status == MediaDescription.Status.NOT_UNDERSTOOD
    assert fake_llm.requests == [] and not LLMCall.objects.exists()
    assert render_audio(MediaItem.from_part(message.media[0]), row, speaker="Alice") == (
        "‹a voice message from Alice, 3.0 s›"
    )


def test_a_100_mb_voice_note_is_not_transcribed_nor_read(dm, fake_llm, media_root):
    message = _voice(dm, "VHUGE", _file(media_root, "huge.ogg", b"OggS", size=100 * MB), duration=30.0)

    row, peak = _described([message])

    assert row.status == MediaDescription.Status.UNSUPPORTED
    assert fake_llm.requests == [] and not LLMCall.objects.exists()
    assert peak < 10 * MB
