"""`manage.py sandbox file`: any media sent to a sandbox agent, its kind sniffed from the bytes or
given, and files past the limit refused by their size before anything reads them."""

from __future__ import annotations

import io
import os
import pathlib

import pytest
from django.core.management import CommandError, call_command

from cindy_site.testing.audio import video_note
from cindy_site.testing.mtproto.media import image_bytes, tgs_bytes
from conversations.models import Message
from engine.tests.harness import Harness
from sandbox.models import SandboxMessage
from sandbox.services.files import sniff_file

pytestmark = pytest.mark.django_db

PNG = image_bytes("hi", size=(32, 32), color="red", fmt="PNG")
JPEG = image_bytes("hi", size=(32, 32), color="blue", fmt="JPEG")
WEBP = image_bytes("hi", size=(32, 32), color="green", fmt="WEBP")
PDF = b"%PDF-1.4\n% a small document\n" + b"0" * 100

# (file name, bytes, --kind or None, media_kind, sticker_format, mime)
CASES = [
    ("cat.png", PNG, None, "photo", None, "image/png"),
    ("cat.jpg", JPEG, "photo", "photo", None, "image/jpeg"),
    ("wave.webp", WEBP, None, "sticker", "static", "image/webp"),
    ("slide.tgs", tgs_bytes(), None, "sticker", "animated", "application/x-tgsticker"),
    ("clip.mp4", video_note(1.0), None, "video", None, "video/mp4"),
    ("notes.pdf", PDF, None, "document", None, "application/pdf"),
]


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return tmp_path


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("sandbox", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "kind", "media_kind", "sticker_format", "mime"), CASES, ids=[c[0] for c in CASES]
)
def test_each_kind_lands_in_the_sandbox_chat_and_reaches_the_agents_conversation(
    agent, clock, media_root, settings, name, data, kind, media_kind, sticker_format, mime
):
    path = media_root / name
    path.write_bytes(data)
    harness = Harness(clock)
    harness.start()

    printed = _run("file", "Wendy", str(path), "--as", "Ada", *(["--kind", kind] if kind else []))

    message = SandboxMessage.objects.get()
    [part] = message.media
    assert printed.startswith(f"sent #{message.message_id} (")
    assert (part["media_kind"], part.get("sticker_format"), part["mime"]) == (
        media_kind,
        sticker_format,
        mime,
    )
    assert (settings.MEDIA_ROOT / part["file"]).read_bytes() == data
    assert part["size"] == len(data)
    if media_kind == "video":
        assert part["duration"] == pytest.approx(1.0, abs=0.2)

    harness.ingest()
    harness.step("media")  # the gateway downloads it, as it would from Telegram
    [mirrored] = Message.objects.get(conversation__agent=agent, message_id=message.message_id).media
    assert (mirrored["media_kind"], mirrored["mime"], mirrored["unique_id"]) == (
        media_kind,
        mime,
        part["unique_id"],
    )
    assert mirrored.get("sticker_format") == sticker_format
    assert (settings.MEDIA_ROOT / mirrored["file"]).read_bytes() == data


def test_the_kind_comes_from_the_bytes_not_the_name(agent, clock, media_root):
    disguised = media_root / "holiday.jpg"
    disguised.write_bytes(tgs_bytes())

    _run("file", "Wendy", str(disguised), "--as", "Ada")

    [part] = SandboxMessage.objects.get().media
    assert (part["media_kind"], part["sticker_format"]) == ("sticker", "animated")


def test_a_gzip_that_is_not_lottie_is_a_document(agent, clock, media_root):
    import gzip

    archive = media_root / "logs.tgs"
    archive.write_bytes(gzip.compress(b"just some log lines\n" * 50))

    _run("file", "Wendy", str(archive), "--as", "Ada")

    [part] = SandboxMessage.objects.get().media
    assert (part["media_kind"], part["mime"], part["file_name"]) == (
        "document",
        "application/gzip",
        "logs.tgs",
    )


def test_an_explicit_kind_sends_a_mislabelled_file_as_that_kind(agent, clock, media_root, settings):
    path = media_root / "cat.png"
    path.write_bytes(PNG)

    _run("file", "Wendy", str(path), "--as", "Ada", "--kind", "animated-sticker")
    _run("file", "Wendy", str(path), "--as", "Ada", "--kind", "video", "--caption", "watch")

    sticker, video = (m.media[0] for m in SandboxMessage.objects.order_by("message_id"))
    # As Telegram states a file sent that way, whatever the bytes hold: downstream checks meet it.
    assert (sticker["media_kind"], sticker["sticker_format"], sticker["mime"]) == (
        "sticker",
        "animated",
        "application/x-tgsticker",
    )
    assert (settings.MEDIA_ROOT / sticker["file"]).read_bytes() == PNG
    assert (video["media_kind"], video["mime"]) == ("video", "video/mp4")
    assert isinstance(video["duration"], float)
    assert SandboxMessage.objects.order_by("message_id").last().text == "watch"
    assert sticker["unique_id"] != video["unique_id"]


def test_an_unknown_kind_is_refused_by_the_parser(agent, clock, media_root):
    path = media_root / "cat.png"
    path.write_bytes(PNG)
    with pytest.raises(CommandError, match="invalid choice: 'gif'"):
        _run("file", "Wendy", str(path), "--kind", "gif")


def _forbid_reading(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the file was opened before its size was checked")

    monkeypatch.setattr(pathlib.Path, "open", refuse)
    monkeypatch.setattr(pathlib.Path, "read_bytes", refuse)


@pytest.mark.parametrize("action", ["file", "voice"])
def test_a_file_past_the_limit_is_refused_before_it_is_read(agent, clock, media_root, monkeypatch, action):
    huge = media_root / "huge.ogg"
    with huge.open("wb") as out:
        os.truncate(out.fileno(), 100 * 1024**3)  # 100 GiB, sparse: nothing is written
    _forbid_reading(monkeypatch)

    with pytest.raises(CommandError) as raised:
        _run(action, "Wendy", str(huge), "--as", "Ada")

    assert str(raised.value) == (
        f"the {'file' if action == 'file' else 'voice note'} {huge} is 107,374,182,400 bytes; "
        "the sandbox takes at most 20,000,000 (CINDY_SANDBOX_MAX_FILE_BYTES): send a smaller file "
        "or raise the setting"
    )
    assert not SandboxMessage.objects.exists()


def test_the_limit_is_the_setting(agent, clock, media_root, settings):
    settings.CINDY_SANDBOX_MAX_FILE_BYTES = len(PNG) - 1
    path = media_root / "cat.png"
    path.write_bytes(PNG)
    with pytest.raises(
        CommandError, match=rf"is {len(PNG):,} bytes; the sandbox takes at most {len(PNG) - 1:,}"
    ):
        _run("file", "Wendy", str(path))
    settings.CINDY_SANDBOX_MAX_FILE_BYTES = len(PNG)
    assert _run("file", "Wendy", str(path)).startswith("sent #1 (photo image/png")


def test_empty_and_missing_files_are_refused(agent, clock, media_root):
    empty = media_root / "empty.png"
    empty.write_bytes(b"")
    with pytest.raises(CommandError, match=r"empty\.png is empty \(0 bytes\)"):
        _run("file", "Wendy", str(empty))
    with pytest.raises(CommandError, match=r"cannot read the file .*missing\.png: No such file"):
        _run("file", "Wendy", str(media_root / "missing.png"))
    assert not SandboxMessage.objects.exists()


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"\x1a\x45\xdf\xa3" + b"\0" * 60, ("video", "video/webm", ".webm")),
        (b"GIF89a" + b"\0" * 60, ("document", "image/gif", ".gif")),
        (b"plain words" + b"\0" * 60, ("document", "application/octet-stream", ".bin")),
        (b"\x1f\x8b\x08\x00garbage", ("document", "application/gzip", ".gz")),
    ],
)
def test_sniffing_reads_the_first_bytes(head, expected):
    assert sniff_file(head) == expected
