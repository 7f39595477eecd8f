"""Hostile animated stickers and gzip documents: no render past the limits, never a crash, no call."""

from __future__ import annotations

import gzip
import json
import logging
import subprocess

import pytest

from cindy_site.testing.mtproto.media import lottie_json, nested_precomp_tgs, tgs_bytes
from llm.calls import MIN_ATTEMPT_SECONDS
from llm.conversation import render_media
from llm.media import warm_media_descriptions
from llm.media_tgs import is_tgs
from llm.tests.conftest import add_message
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


@pytest.fixture
def renders(monkeypatch):
    """The child processes started, by their command line (the real ones still run)."""
    started: list[list[str]] = []
    real_run = subprocess.run

    def run(args, *rest, **kwargs):
        started.append(list(args))
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", run)
    return started


def _media(dm, message_id, unique_id, data: bytes, *, media_root, **fields):
    (media_root / "chat" / unique_id).write_bytes(data)
    part = {"kind": "media", "unique_id": unique_id, "file": f"chat/{unique_id}", **fields}
    return add_message(dm, message_id, media=[part])


def _sticker(dm, message_id, unique_id, data: bytes, *, media_root):
    return _media(
        dm,
        message_id,
        unique_id,
        data,
        media_root=media_root,
        media_kind="sticker",
        mime="application/x-tgsticker",
        sticker_set_name="BoomSet",
        sticker_name="💥",
        sticker_format="animated",
    )


def test_a_nested_precomposition_sticker_is_described_by_its_emoji_without_rendering(
    dm, fake_llm, media_root, renders, caplog
):
    message = _sticker(dm, 1, "TGSBOOM", nested_precomp_tgs(levels=10, fan=10), media_root=media_root)

    with caplog.at_level(logging.WARNING, logger="llm.media"):
        assert warm_media_descriptions([message]) == 1

    row = MediaDescription.objects.get(unique_id="TGSBOOM")
    assert (row.status, row.description) == ("not_understood", None)
    assert renders == [] and fake_llm.requests == []
    assert "TGSBOOM (BoomSet 💥) is not rendered: it expands to more than 2000 layers" in caplog.text
    assert render_media(MediaItem.from_part(message.media[0]), row).startswith(
        "‹the sticker 💥 from the set BoomSet"
    )


def test_a_gzip_document_is_not_rendered_as_a_sticker(dm, fake_llm, media_root, renders):
    lottie = gzip.compress(json.dumps(lottie_json()).encode())
    message = _media(
        dm, 1, "GZDOC", lottie, media_root=media_root, media_kind="document", mime="application/gzip"
    )

    warm_media_descriptions([message])

    assert renders == [] and fake_llm.requests == []
    assert MediaDescription.objects.get(unique_id="GZDOC").status == "unsupported"


def test_only_what_telegram_calls_an_animated_sticker_is_one():
    gzip_head = b"\x1f\x8b\x08\x00"
    document = MediaItem(unique_id="D", media_kind="document", mime="application/gzip")
    no_mime_document = MediaItem(unique_id="D", media_kind="document", mime="")

    assert not is_tgs(document, gzip_head)
    assert not is_tgs(no_mime_document, gzip_head)
    assert is_tgs(MediaItem(unique_id="S", media_kind="sticker", mime="application/x-tgsticker"), b"")
    assert is_tgs(MediaItem(unique_id="S", media_kind="sticker", sticker_format="animated"), b"")
    assert is_tgs(MediaItem(unique_id="S", media_kind="sticker", mime=""), gzip_head)


def test_a_normal_sticker_still_renders_in_a_child_and_is_described(dm, fake_llm, media_root, renders):
    fake_llm.reply_with("A red square slides.")
    message = _sticker(dm, 1, "TGSOK", tgs_bytes(), media_root=media_root)

    warm_media_descriptions([message])

    assert MediaDescription.objects.get(unique_id="TGSOK").status == "ok"
    assert len(renders) == 1 and renders[0][-2].endswith("lottie_child.py")


def test_a_sticker_whose_render_runs_out_of_memory_is_not_understood_and_the_worker_lives(
    dm, fake_llm, media_root, settings, renders
):
    # Let it through the budget: the child's limit must hold.
    settings.CINDY_TGS_MAX_LAYERS = settings.CINDY_TGS_MAX_SHAPES = 1_000_000
    settings.CINDY_TGS_RENDER_MEMORY_MB = 64
    message = _sticker(dm, 1, "TGSOOM", nested_precomp_tgs(levels=5, fan=10), media_root=media_root)

    warm_media_descriptions([message])

    assert len(renders) == 1 and fake_llm.requests == []
    assert MediaDescription.objects.get(unique_id="TGSOOM").status == "not_understood"


def test_rendering_gets_no_more_than_the_turn_has_left(dm, fake_llm, media_root, renders, clock):
    fake_llm.reply_with("A red square slides.")
    message = _sticker(dm, 1, "TGSLATE", tgs_bytes(), media_root=media_root)
    deadline = clock.monotonic() + MIN_ATTEMPT_SECONDS + 3

    warm_media_descriptions([message], deadline=deadline)

    assert json.loads(renders[0][-1])["cpu"] == 3  # the child's CPU limit, as its wall-clock timeout
    assert MediaDescription.objects.get(unique_id="TGSLATE").status == "ok"
