"""Stored media parts read through `MediaItem`: one parse at the edge, typed fields after it."""

from __future__ import annotations

import pytest

from media_catalog.parts import MediaItem, MediaPartError, StoredMedia, media_items


def test_a_part_reads_back_as_the_item_it_was_stored_from():
    item = MediaItem(
        media_kind="voice", unique_id="V1", mime="audio/ogg", duration=2.5, extra={"round": False}
    )
    assert MediaItem.from_part(item.to_part()) == item


def test_a_stored_part_reads_the_gateways_download_and_ignores_unknown_keys():
    part = {"kind": "media", "media_kind": "photo", "unique_id": "P1", "file": "media_store/P1.jpg", "x": 1}
    [item] = media_items([part])
    assert (item.file, item.stored_file, item.download_error) == ("media_store/P1.jpg",) * 2 + ("",)


def test_a_transports_own_file_is_not_taken_for_the_gateways_download():
    part = {"media_kind": "voice", "unique_id": "V1", "file": "sandbox/voice-1.ogg"}
    assert MediaItem.from_part(part).to_part() == {"kind": "media", "media_kind": "voice", "unique_id": "V1"}


def test_a_numeric_unique_id_is_read_as_text():
    assert MediaItem.from_part({"media_kind": "photo", "unique_id": 5551}).unique_id == "5551"


def test_a_part_without_a_kind_has_an_empty_kind_for_the_reader_to_name():
    assert MediaItem.from_part({"unique_id": "X"}).media_kind == ""


def test_a_round_video_and_a_voice_transcript_are_read_from_extra():
    note = StoredMedia.from_part({"media_kind": "video", "extra": {"round": True, "file": "sent/n.mp4"}})
    voice = MediaItem.from_part({"media_kind": "voice", "extra": {"transcript": "See you"}})
    assert (note.is_round, note.stored_file, voice.transcript, voice.is_round) == (
        True,
        "sent/n.mp4",
        "See you",
        False,
    )


@pytest.mark.parametrize(
    ("part", "field", "words"),
    [
        ({"media_kind": "video", "duration": "90"}, "duration", "a number of seconds"),
        ({"media_kind": "video", "duration": True}, "duration", "a number of seconds"),
        ({"media_kind": "document", "size": 1.5}, "size", "a whole number of bytes"),
        ({"media_kind": "photo", "extra": []}, "extra", "an object"),
        ({"media_kind": 3}, "media_kind", "text"),
        ("photo", "part", "an object"),
    ],
)
def test_a_malformed_part_is_refused_naming_the_field(part, field, words):
    with pytest.raises(MediaPartError) as refused:
        MediaItem.from_part(part)
    assert refused.value.field == field
    assert f'"{field}"' in str(refused.value) and words in str(refused.value)


def test_a_message_without_media_has_no_items():
    assert media_items(None) == [] and media_items([]) == []
