"""Curating media descriptions in the admin: a person's text is curated and wins over AI."""

from __future__ import annotations

import gzip
import io
import json
import re

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from PIL import Image

from media_catalog.models import MediaDescription, Sticker, StickerSet

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/media_catalog/mediadescription/"
# A 1x1 WebP (lossless), enough for a browser and for the mime check.
WEBP = bytes.fromhex("524946461a000000574542505650384c0d0000002f0000001007100511118888fe0700")


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


def ai_description(unique_id: str, text: str, **fields) -> MediaDescription:
    return MediaDescription.objects.create(
        unique_id=unique_id, kind="sticker", description=text, status="ok", source="ai", **fields
    )


def test_editing_a_description_makes_it_curated(verified_client):
    row = ai_description("AgA1", "a cat", sticker_set_name="Cats", sticker_name="😺")
    url = reverse("admin:media_catalog_mediadescription_change", args=[row.pk])
    response = verified_client.get(url)
    form = response.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k not in {"file", "extra"}}
    data.update({"description": "a grumpy orange cat", "extra": "{}"})

    response = verified_client.post(url, data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    row.refresh_from_db()
    assert (row.description, row.source, row.status) == ("a grumpy orange cat", "curated", "curated")


def test_bulk_editing_in_the_list_curates_only_the_changed_rows(verified_client):
    first = ai_description("AgA1", "a cat")
    second = ai_description("AgA2", "a dog")
    data = {
        "form-TOTAL_FORMS": "2",
        "form-INITIAL_FORMS": "2",
        "form-0-id": str(first.pk),
        "form-0-description": "a sleepy cat",
        "form-1-id": str(second.pk),
        "form-1-description": "a dog",
        "_save": "Save",
    }

    response = verified_client.post(CHANGELIST, data)

    assert response.status_code == 302
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.description, first.source, first.status) == ("a sleepy cat", "curated", "curated")
    assert (second.source, second.status) == ("ai", "ok")


def test_mark_curated_action_keeps_the_text(verified_client):
    row = ai_description("AgA1", "a cat")
    response = verified_client.post(
        CHANGELIST, {"action": "mark_curated", "_selected_action": [str(row.pk)], "index": "0"}
    )
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.description, row.source, row.status) == ("a cat", "curated", "curated")


def test_filters_by_set_status_and_source(verified_client):
    ai_description("AgA1", "a cat", sticker_set_name="Cats")
    ai_description("AgA2", "a dog", sticker_set_name="Dogs")
    MediaDescription.objects.create(unique_id="AgA3", description="x", status="curated", source="curated")

    by_set = verified_client.get(CHANGELIST, {"set": "Cats"}).context["cl"].queryset
    assert [d.unique_id for d in by_set] == ["AgA1"]
    by_source = verified_client.get(CHANGELIST, {"source__exact": "curated"}).context["cl"].queryset
    assert [d.unique_id for d in by_source] == ["AgA3"]
    by_status = verified_client.get(CHANGELIST, {"status__exact": "ok"}).context["cl"].queryset
    assert sorted(d.unique_id for d in by_status) == ["AgA1", "AgA2"]


def test_a_static_sticker_is_previewed_as_an_image_served_through_the_admin(verified_client):
    row = ai_description("AgAwebp", "a cat", mime="image/webp", sticker_name="😺")
    row.file.save("AgAwebp.webp", ContentFile(WEBP))
    file_url = reverse("admin:media_catalog_mediadescription_file", args=[row.pk])

    body = verified_client.get(CHANGELIST).content.decode()
    assert f'<img src="{file_url}"' in body

    response = verified_client.get(file_url)
    assert response.status_code == 200
    assert response["Content-Type"] == "image/webp"
    assert b"".join(response.streaming_content) == WEBP


def lottie_square(rgb: tuple[float, float, float]) -> bytes:
    """A one-layer Lottie animation (a filled square) as a TGS file: gzip-compressed JSON."""
    square = {
        "ty": "rc",
        "d": 1,
        "s": {"a": 0, "k": [300, 300]},
        "p": {"a": 0, "k": [0, 0]},
        "r": {"a": 0, "k": 0},
    }
    fill = {"ty": "fl", "c": {"a": 0, "k": [*rgb, 1]}, "o": {"a": 0, "k": 100}, "r": 1}
    transform = {
        "ty": "tr",
        "p": {"a": 0, "k": [0, 0]},
        "a": {"a": 0, "k": [0, 0]},
        "s": {"a": 0, "k": [100, 100]},
        "r": {"a": 0, "k": 0},
        "o": {"a": 0, "k": 100},
    }
    layer = {
        "ddd": 0,
        "ind": 1,
        "ty": 4,
        "nm": "box",
        "sr": 1,
        "ao": 0,
        "ip": 0,
        "op": 60,
        "st": 0,
        "bm": 0,
        "ks": {
            "o": {"a": 0, "k": 100},
            "r": {"a": 0, "k": 0},
            "p": {"a": 0, "k": [256, 256, 0]},
            "a": {"a": 0, "k": [0, 0, 0]},
            "s": {"a": 0, "k": [100, 100, 100]},
        },
        "shapes": [{"ty": "gr", "it": [square, fill, transform]}],
    }
    animation = {
        "v": "5.5.2",
        "fr": 60,
        "ip": 0,
        "op": 60,
        "w": 512,
        "h": 512,
        "ddd": 0,
        "assets": [],
        "layers": [layer],
    }
    return gzip.compress(json.dumps(animation).encode())


def test_an_animated_tgs_sticker_is_rendered_to_a_still_image_with_a_badge(verified_client):
    row = ai_description("AgAtgs", "a red square", sticker_name="💃")
    row.file.save("AgAtgs.tgs", ContentFile(lottie_square((1, 0, 0))))
    file_url = reverse("admin:media_catalog_mediadescription_file", args=[row.pk])

    body = verified_client.get(CHANGELIST).content.decode()
    assert f'<img src="{file_url}?frame=png"' in body
    assert "animated sticker" in body and "💃" in body

    response = verified_client.get(file_url, {"frame": "png"})
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    image = Image.open(io.BytesIO(response.content))
    assert image.getpixel((image.width // 2, image.height // 2))[:3] == (255, 0, 0)
    assert image.getpixel((2, 2))[3] == 0  # transparent outside the square


def test_a_broken_tgs_file_keeps_its_badge_and_its_frame_is_not_found(verified_client):
    row = ai_description("AgAtgs", "broken", sticker_name="💃")
    row.file.save("AgAtgs.tgs", ContentFile(b"\x1f\x8b not really lottie"))
    file_url = reverse("admin:media_catalog_mediadescription_file", args=[row.pk])

    assert "animated sticker" in verified_client.get(CHANGELIST).content.decode()
    assert verified_client.get(file_url, {"frame": "png"}).status_code == 404


def test_media_files_are_not_served_without_otp(client, staff_user):
    row = ai_description("AgAwebp", "a cat", mime="image/webp")
    row.file.save("AgAwebp.webp", ContentFile(WEBP))
    client.force_login(staff_user)
    response = client.get(reverse("admin:media_catalog_mediadescription_file", args=[row.pk]))
    assert response.status_code == 302


def test_the_sticker_list_previews_each_sticker_file(verified_client):
    sticker_set = StickerSet.objects.create(short_name="Cats")
    sticker = Sticker.objects.create(sticker_set=sticker_set, name="😺", unique_id="AgAs", mime="image/webp")
    sticker.file.save("AgAs.webp", ContentFile(WEBP))
    file_url = reverse("admin:media_catalog_sticker_file", args=[sticker.pk])

    body = verified_client.get("/admin/media_catalog/sticker/").content.decode()

    assert f'<img src="{file_url}"' in body
    response = verified_client.get(file_url)
    assert response.status_code == 200 and response["Content-Type"] == "image/webp"


HTML = b"<!doctype html><html><script>alert(document.cookie)</script></html>"


@pytest.mark.parametrize("declared", ["text/html", "image/svg+xml", "image/png", ""])
def test_a_file_that_is_not_an_image_is_only_ever_a_download(verified_client, declared):
    row = ai_description("AgAhtml", "not a sticker", mime=declared)
    row.file.save("AgAhtml.html", ContentFile(HTML))
    response = verified_client.get(reverse("admin:media_catalog_mediadescription_file", args=[row.pk]))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert b"".join(response.streaming_content) == HTML


def test_an_image_is_served_inline_as_the_type_its_bytes_show_not_the_declared_one(verified_client):
    sticker_set = StickerSet.objects.create(short_name="Cats")
    sticker = Sticker.objects.create(sticker_set=sticker_set, name="😺", unique_id="AgAs", mime="text/html")
    sticker.file.save("AgAs.webp", ContentFile(WEBP))
    response = verified_client.get(reverse("admin:media_catalog_sticker_file", args=[sticker.pk]))

    assert response["Content-Type"] == "image/webp"
    assert "Content-Disposition" not in response or "attachment" not in response["Content-Disposition"]
    assert response["X-Content-Type-Options"] == "nosniff"


def gzip_bomb(unpacked_bytes: int) -> bytes:
    """A small gzip file that unpacks to `unpacked_bytes` bytes of JSON-looking filler."""
    return gzip.compress(b"[" + b" " * (unpacked_bytes - 2) + b"]", compresslevel=9)


def test_a_tgs_that_unpacks_past_the_limit_is_refused_without_unpacking_it(monkeypatch):
    from media_catalog import previews
    from media_catalog.lottie_render import tgs_frame_png

    bomb = gzip_bomb(previews.MAX_LOTTIE_BYTES * 4)
    assert len(bomb) < previews.MAX_TGS_BYTES
    # Unpacking must stop at the limit: gzip.decompress (which unpacks everything) is not used.
    monkeypatch.setattr(gzip, "decompress", lambda *a, **k: pytest.fail("unbounded gzip.decompress"))
    with pytest.raises(previews.PreviewTooLarge, match="unpacks to more than 8 MB"):
        tgs_frame_png(bomb)


def test_a_gzip_bomb_sticker_gets_a_too_large_badge_instead_of_a_preview(verified_client):
    from media_catalog import previews

    row = ai_description("AgAbomb", "a bomb", sticker_name="💣")
    row.file.save("AgAbomb.tgs", ContentFile(gzip_bomb(previews.MAX_LOTTIE_BYTES + 10)))
    response = verified_client.get(
        reverse("admin:media_catalog_mediadescription_file", args=[row.pk]), {"frame": "png"}
    )

    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["X-Cindy-Preview"].startswith("refused: the animation unpacks to more than")
    assert Image.open(io.BytesIO(response.content)).size == (
        previews.PREVIEW_SIZE,
        previews.PREVIEW_SIZE // 4,
    )


def test_a_truncated_tgs_is_not_a_preview(verified_client):
    row = ai_description("AgAcut", "cut", sticker_name="✂️")
    row.file.save("AgAcut.tgs", ContentFile(lottie_square((0, 1, 0))[:40]))
    url = reverse("admin:media_catalog_mediadescription_file", args=[row.pk])
    assert verified_client.get(url, {"frame": "png"}).status_code == 404


def test_the_status_column_says_each_word_once_and_whose_text_it_is(verified_client):
    ai_description("AgA1", "a cat")
    MediaDescription.objects.create(unique_id="AgA2", kind="voice", status="timeout", source="ai")
    MediaDescription.objects.create(unique_id="AgA3", description="x", status="curated", source="curated")

    html = verified_client.get(CHANGELIST).content.decode()
    cells = dict(
        re.findall(
            r'<a href="[^"]*/(\d+)/change/[^"]*">AgA\d</a>.*?<td class="field-state">([^<]*)</td>', html, re.S
        )
    )
    by_id = {str(row.pk): row.unique_id for row in MediaDescription.objects.all()}
    assert {by_id[pk]: text for pk, text in cells.items()} == {
        "AgA1": "OK · AI description",
        "AgA2": "Timeout · AI description",
        "AgA3": "Curated",
    }
    assert "Curated · Curated" not in html
