"""Animated stickers that would explode are refused before rendering; rendering runs in a limited child."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import time
import tracemalloc

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from PIL import Image

from cindy_site.testing.mtproto.media import lottie_json, nested_precomp_lottie, nested_precomp_tgs, tgs_bytes
from media_catalog.lottie_budget import AnimationTooComplex, LottieLimits, lottie_budget, lottie_check
from media_catalog.lottie_render import RenderFailed, RenderLimits, render_in_child, render_tgs
from media_catalog.models import MediaDescription
from media_catalog.previews import PreviewError, unpack_tgs


def _raw(animation: dict) -> bytes:
    return json.dumps(animation).encode()


@pytest.fixture
def no_renderer(monkeypatch):
    """Fails the test if any child process is started: refusals must come before rendering."""
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("the renderer was started"))


def test_a_hostile_nested_sticker_is_refused_before_rendering_fast_and_small(no_renderer):
    hostile = nested_precomp_tgs(levels=10, fan=10)  # 10**10 layers
    assert len(hostile) < 700

    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(AnimationTooComplex, match=r"more than 2000 layers .*CINDY_TGS_MAX_LAYERS"):
        render_tgs(hostile, count=4, size=256, on_white=True, limits=LottieLimits(layers=2000))
    elapsed = time.monotonic() - started
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert elapsed < 1.0
    assert peak < 2 * 1024 * 1024


def test_layers_are_counted_through_precompositions_multiplicatively_up_to_the_cap():
    three_by_four = _raw(nested_precomp_lottie(levels=3, fan=4))
    # 1 top layer + 4 + 16 + 64 layers below it
    assert lottie_budget(three_by_four, max_layers=10_000).layers == 1 + 4 + 16 + 64
    assert lottie_budget(three_by_four, max_layers=20).layers == 21  # counting stops past the cap
    assert lottie_check(three_by_four, LottieLimits(layers=85)).layers == 85
    with pytest.raises(AnimationTooComplex, match="more than 84 layers"):
        lottie_check(three_by_four, LottieLimits(layers=84))


def _repeater(copies) -> dict:
    return {"ty": "rp", "c": copies, "o": {"a": 0, "k": 0}, "m": 1, "tr": {"ty": "tr"}}


def test_shapes_are_counted_through_precompositions_and_multiplied_by_repeaters(no_renderer):
    # 64 leaf layers of a rectangle and a fill each
    assert lottie_budget(_raw(nested_precomp_lottie(levels=3, fan=4)), max_layers=10_000).shapes == 128
    animation = lottie_json()
    group = animation["layers"][0]["shapes"][0]  # a group of a rectangle, a fill and a transform
    assert lottie_budget(_raw(animation), max_layers=10).shapes == 4

    group["it"].insert(2, _repeater({"a": 0, "k": 1000}))  # repeats the rectangle and the fill
    assert lottie_budget(_raw(animation), max_layers=10).shapes == 1 + 2000 + 1

    group["it"][2] = _repeater({"a": 1, "k": [{"t": 0, "s": [3]}, {"t": 30, "s": [1_000_000]}]})
    with pytest.raises(AnimationTooComplex, match=r"more than 50000 shapes .*CINDY_TGS_MAX_SHAPES"):
        render_tgs(gzip.compress(_raw(animation)), count=1, size=64, on_white=True, limits=LottieLimits())


def test_repeaters_inside_repeated_groups_multiply(no_renderer):
    animation = lottie_json()
    inner = animation["layers"][0]["shapes"][0]
    outer = {"ty": "gr", "it": [inner, _repeater({"a": 0, "k": 300})]}
    inner["it"].insert(2, _repeater({"a": 0, "k": 300}))
    animation["layers"][0]["shapes"] = [outer]

    assert lottie_budget(_raw(animation), max_layers=10).shapes == 1 + 300 * (1 + 300 * 2 + 1)
    with pytest.raises(AnimationTooComplex, match="more than 50000 shapes"):
        lottie_check(_raw(animation), LottieLimits())


def test_a_precomposition_that_refers_to_itself_is_refused_by_name():
    animation = nested_precomp_lottie(levels=3, fan=2)
    animation["assets"][0]["layers"].append({"ty": 0, "refId": "p2", "ip": 0, "op": 60, "st": 0})

    with pytest.raises(AnimationTooComplex, match=r"cycle \(p2 -> p1 -> p0 -> p2\)"):
        lottie_check(_raw(animation), LottieLimits())


def test_precompositions_nested_too_deep_are_refused():
    with pytest.raises(AnimationTooComplex, match="nested more than 32 deep"):
        lottie_check(_raw(nested_precomp_lottie(levels=40, fan=1)), LottieLimits())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"op": 100_000}, r"100000 frames \(op - ip\); at most 600 \(CINDY_TGS_MAX_FRAMES\)"),
        ({"fr": 10_000}, r"frame rate is 10000; at most 120 \(CINDY_TGS_MAX_FRAME_RATE\)"),
        ({"w": 100_000}, r"100000x512; at most 2048 a side \(CINDY_TGS_MAX_SIDE\)"),
    ],
)
def test_frames_frame_rate_and_size_past_their_limits_are_refused(change, message):
    with pytest.raises(AnimationTooComplex, match=message):
        lottie_check(_raw({**lottie_json(), **change}), LottieLimits())


@pytest.mark.parametrize(
    "animation",
    [{"v": "5.5.2"}, [1, 2], {**lottie_json(), "op": 0}, {**lottie_json(), "layers": "none"}],
)
def test_json_that_is_not_an_animation_is_not_lottie(animation):
    with pytest.raises(PreviewError, match="not a Lottie animation") as caught:
        lottie_check(_raw(animation), LottieLimits())
    assert not isinstance(caught.value, AnimationTooComplex)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"v": "5", "fr": 60, "ip": 0, "op": NaN, "w": 512, "h": 512, "layers": []}',
        b'{"v": "5", "fr": Infinity, "ip": 0, "op": 60, "w": 512, "h": 512, "layers": []}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"layers": {"ty": 0}}',
        b"\xff\xfe not json",
    ],
)
def test_hostile_json_is_refused_with_a_reason_never_a_crash(raw, no_renderer):
    with pytest.raises(PreviewError, match="not a Lottie animation|not a TGS file|nested too deeply"):
        lottie_check(raw, LottieLimits())


def test_a_repeater_with_unreadable_copies_counts_as_one():
    animation = lottie_json()
    animation["layers"][0]["shapes"][0]["it"].insert(2, _repeater({"a": 0, "k": "many"}))
    assert lottie_budget(_raw(animation), max_layers=10).shapes == 4  # as if there were no repeater
    animation["layers"][0]["shapes"][0]["it"][2] = _repeater({"a": 1, "k": [{"s": [float("nan")]}]})
    assert lottie_budget(_raw(animation), max_layers=10).shapes == 4  # as if there were no repeater


def test_a_normal_sticker_is_measured_and_rendered_in_the_child():
    budget = lottie_check(unpack_tgs(tgs_bytes()), LottieLimits())
    assert (budget.layers, budget.shapes, budget.frames, budget.width) == (1, 4, 30, 512)

    frames = render_tgs(tgs_bytes(frames=30), count=3, size=64, on_white=True, limits=LottieLimits())

    assert len(frames) == 3
    assert all(Image.open(io.BytesIO(f)).size == (64, 64) for f in frames)


def test_a_runaway_render_is_a_clear_failure_of_the_child_only():
    # 10**5 layers pass no budget here (the child is called directly) but need far more than 64 MiB.
    raw = _raw(nested_precomp_lottie(levels=5, fan=10))

    with pytest.raises(RenderFailed, match=r"64 MiB .*CINDY_TGS_RENDER_MEMORY_MB"):
        render_in_child(raw, count=1, size=64, on_white=True, limits=RenderLimits(memory_mb=64, seconds=20))


def test_a_file_the_child_cannot_read_is_not_lottie_not_a_crash():
    with pytest.raises(PreviewError, match="not a Lottie animation|not a TGS file") as caught:
        render_in_child(b'{"v": 1}', count=1, size=64, on_white=True, limits=RenderLimits())
    assert not isinstance(caught.value, RenderFailed)


@pytest.mark.django_db
def test_the_admin_shows_a_notice_instead_of_rendering_a_hostile_sticker(verified_client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    row = MediaDescription.objects.create(
        unique_id="AgAnest",
        kind="sticker",
        status="not_understood",
        sticker_name="💥",
        mime="application/x-tgsticker",
    )
    row.file.save("AgAnest.tgs", ContentFile(nested_precomp_tgs()))

    response = verified_client.get(
        reverse("admin:media_catalog_mediadescription_file", args=[row.pk]), {"frame": "png"}
    )

    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert "more than 2000 layers" in response["X-Cindy-Preview"]


@pytest.mark.django_db
def test_a_gzip_document_is_no_sticker_in_the_admin(verified_client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    row = MediaDescription.objects.create(
        unique_id="AgAgz", kind="document", status="unsupported", mime="application/gzip"
    )
    row.file.save("AgAgz.gz", ContentFile(gzip.compress(json.dumps(lottie_json()).encode())))
    file_url = reverse("admin:media_catalog_mediadescription_file", args=[row.pk])

    body = verified_client.get("/admin/media_catalog/mediadescription/").content.decode()
    assert f"{file_url}?frame=png" not in body and "animated sticker" not in body

    response = verified_client.get(file_url, {"frame": "png"})
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
