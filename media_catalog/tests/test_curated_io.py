from __future__ import annotations

import json

import pytest
from django.core.files.base import ContentFile

from cindy_site.testing.factories import MediaDescriptionFactory
from media_catalog.models import MediaDescription
from media_catalog.services.curated_io import (
    CuratedMediaError,
    curated_media_export,
    curated_media_save,
    find_media_file,
    media_to_file,
    parse_curated_media,
)

SRC = "configdir/media/U9.json"
STICKER = {
    "unique_id": "U9",
    "kind": "sticker",
    "sticker_set_name": "MrRibbit",
    "sticker_name": "💻",
    "description": "A cartoon frog typing.",
}


def parse(**changes):
    data = {**STICKER, **changes}
    return parse_curated_media(
        json.dumps({k: v for k, v in data.items() if v is not ...}), source=SRC, stem="U9"
    )


def error(**changes) -> str:
    with pytest.raises(CuratedMediaError) as info:
        parse(**changes)
    return str(info.value)


def test_a_sticker_description_parses_with_defaults():
    values = parse()
    assert values["unique_id"] == "U9" and values["kind"] == "sticker"
    assert (values["sticker_set_title"], values["mime"], values["duration"], values["extra"]) == (
        "",
        "",
        None,
        {},
    )


def test_unknown_fields_a_non_curated_status_and_an_int_duration_go_to_extra():
    values = parse(status="ok", frames=24, duration=2)
    assert values["extra"] == {"status": "ok", "frames": 24, "duration": 2}
    assert values["duration"] == 2.0
    assert parse(status="curated")["extra"] == {}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"kind": 7}, f'{SRC}: "kind" is 7: use one of sticker, animated_sticker'),
        ({"description": ""}, f'{SRC}: "description" is "": write what the media shows'),
        ({"unique_id": None}, f'{SRC}: "unique_id" is null: write the media\'s unique id as a string'),
        (
            {"unique_id": "U10"},
            f'{SRC}: "unique_id" is "U10" but the file is named U9.json: rename the file to U10.json',
        ),
        ({"duration": "long"}, f'{SRC}: "duration" is "long": write seconds as a number'),
        ({"mime": 3}, f'{SRC}: "mime" is 3: write it as a string'),
    ],
)
def test_invalid_descriptions_name_the_file_field_value_and_fix(changes, expected):
    assert error(**changes).startswith(expected)


def test_media_file_is_found_by_stem_with_any_extension(tmp_path):
    (tmp_path / "U9.json").write_text("{}")
    (tmp_path / "U9.tgs").write_bytes(b"x")
    (tmp_path / "U90.webp").write_bytes(b"y")
    assert find_media_file(tmp_path / "U9.json") == tmp_path / "U9.tgs"
    (tmp_path / "U9.tgs").unlink()
    assert find_media_file(tmp_path / "U9.json") is None


@pytest.mark.django_db
def test_curated_save_overwrites_an_ai_row_and_replaces_its_file(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    MediaDescriptionFactory(unique_id="U9", description="AI guess", source="ai", status="timeout", attempts=3)
    media = tmp_path / "U9.webp"
    media.write_bytes(b"webp-bytes")

    result = curated_media_save(
        values=parse(), media_path=media, origin_dir="/c", source_file="/c/media/U9.json", content_hash="h"
    )

    row = MediaDescription.objects.get(unique_id="U9")
    assert result == "updated"
    assert (row.description, row.source, row.status) == ("A cartoon frog typing.", "curated", "curated")
    assert row.file.read() == b"webp-bytes"
    media.write_bytes(b"new-bytes")
    curated_media_save(
        values=parse(), media_path=media, origin_dir="/c", source_file="/c/media/U9.json", content_hash="h2"
    )
    row.refresh_from_db()
    assert row.file.read() == b"new-bytes"
    stored = [p.name for p in (settings.MEDIA_ROOT / "media_catalog").iterdir()]
    assert stored == [row.file.name.rsplit("/", 1)[-1]]  # the old copy was removed, not left beside it


@pytest.mark.django_db
def test_export_writes_only_curated_rows_with_their_files(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    MediaDescriptionFactory(unique_id="AI1", source="ai")
    curated = MediaDescriptionFactory(
        unique_id="C1", source="curated", status="curated", sticker_set_title="Set", extra={"frames": 3}
    )
    curated.file.save("C1.webp", ContentFile(b"img"))

    assert curated_media_export(out_dir=tmp_path / "media") == 1
    assert sorted(p.name for p in (tmp_path / "media").iterdir()) == ["C1.json", "C1.webp"]
    data = json.loads((tmp_path / "media" / "C1.json").read_text())
    assert data == media_to_file(curated)
    assert list(data)[-1] == "frames" and data["status"] == "curated"


def test_an_unknown_kind_is_kept_as_other_with_a_warning():
    warnings: list[str] = []
    data = {**STICKER, "kind": "hologram", "frames": 3}

    values = parse_curated_media(json.dumps(data), source=SRC, stem="U9", warnings=warnings)

    assert values["kind"] == "other"
    assert values["extra"] == {"kind": "hologram", "frames": 3}
    assert len(warnings) == 1
    assert warnings[0].startswith(f'{SRC}: "kind" is "hologram", not one of sticker, animated_sticker')
    assert 'imported as "other"' in warnings[0]


def test_an_unknown_kind_needs_no_sticker_fields():
    data = {"unique_id": "U9", "kind": "hologram", "description": "A floating frog."}

    assert parse_curated_media(json.dumps(data), source=SRC, stem="U9")["kind"] == "other"


@pytest.mark.django_db
def test_an_unknown_kind_is_exported_as_it_came(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    original = {**STICKER, "kind": "hologram", "status": "curated", "frames": 3}
    values = parse_curated_media(json.dumps(original), source=SRC, stem="U9")
    curated_media_save(values=values, media_path=None, origin_dir="/c", source_file=SRC, content_hash="h")

    curated_media_export(out_dir=tmp_path / "out")

    exported = json.loads((tmp_path / "out" / "U9.json").read_text())
    assert exported == original
    assert list(exported)[:2] == ["unique_id", "kind"]
    assert MediaDescription.objects.get(unique_id="U9").kind == "other"
