from __future__ import annotations

import datetime as dt
import json

import pytest

from cindy_site.testing.factories import AgentFactory, MemoryFactory
from memory.models import Memory
from memory.services.curated_io import (
    CuratedFileError,
    curated_memories_export,
    curated_memories_replace,
    curated_memories_unchanged,
    parse_created,
    parse_curated_memories,
    parse_curated_memory_file,
)

SRC = "agents/Heidi/memory/42.json"


def parse_error(data) -> str:
    with pytest.raises(CuratedFileError) as info:
        parse_curated_memories(data if isinstance(data, str) else json.dumps(data), source=SRC)
    return str(info.value)


def test_original_and_iso_timestamps_parse_as_utc():
    assert parse_created("2025-01-26 14:30:15 UTC") == dt.datetime(2025, 1, 26, 14, 30, 15, tzinfo=dt.UTC)
    assert parse_created("2025-01-26T14:30:15+01:00") == dt.datetime(2025, 1, 26, 13, 30, 15, tzinfo=dt.UTC)
    assert parse_created("2025-01-26T14:30:15").tzinfo == dt.UTC


def test_unknown_fields_and_a_non_default_kind_are_kept_in_extra():
    [entry] = parse_curated_memories(
        json.dumps([{"kind": "fact", "content": "Likes tea.", "mood": "calm", "source": {"x": 1}}]),
        source=SRC,
    )
    assert entry["extra"] == {"kind": "fact", "mood": "calm", "source": {"x": 1}}
    assert (entry["created"], entry["created_raw"], entry["creation_channel_id"]) == (None, "", None)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("[{", f"{SRC}: not valid JSON"),
        ({"content": "x"}, f'{SRC}: the top level is a JSON object without a "memory" list'),
        (7, f"{SRC}: the top level is a JSON int: wrap the memories in a JSON array"),
        (["just text"], f'{SRC}: entry 1 is "just text": each entry must be a JSON object'),
        ([{"content": "  "}], f'{SRC}: entry 1 "content" is "  ": write what to remember'),
    ],
)
def test_invalid_files_name_the_file_entry_field_and_fix(data, expected):
    assert parse_error(data).startswith(expected)


@pytest.mark.django_db
def test_replace_keeps_rows_added_in_the_admin_and_swaps_file_rows():
    agent = AgentFactory()
    by_hand = MemoryFactory(agent=agent, partner_id=42, content="Added by hand", source_file="")
    MemoryFactory(agent=agent, partner_id=42, content="Old file row", source_file="/c/42.json")
    entries = parse_curated_memories(json.dumps([{"content": "New file row"}]), source=SRC)

    result = curated_memories_replace(
        agent=agent, partner_id=42, entries=entries, source_file="/c/42.json", content_hash="h2"
    )

    assert result == "updated"
    assert sorted(Memory.objects.filter(agent=agent).values_list("content", flat=True)) == [
        "Added by hand",
        "New file row",
    ]
    assert Memory.objects.filter(pk=by_hand.pk).exists()
    assert curated_memories_unchanged(
        agent=agent, partner_id=42, source_file="/c/42.json", content_hash="h2", empty=False
    )
    assert not curated_memories_unchanged(
        agent=agent, partner_id=42, source_file="/c/42.json", content_hash="h3", empty=False
    )


@pytest.mark.django_db
def test_export_groups_by_partner_in_file_order_with_extra_fields_last():
    agent = AgentFactory()
    file = {"source_file": "/c/7.json"}
    MemoryFactory(
        agent=agent, partner_id=7, content="second", position=1, created_raw="2025-01-01 00:00:01 UTC", **file
    )
    MemoryFactory(agent=agent, partner_id=7, content="first", position=0, extra={"mood": "calm"}, **file)
    made_here = MemoryFactory(agent=agent, partner_id=8, content="other partner", creation_channel_id=8)

    files = curated_memories_export(agent=agent)

    assert sorted(files) == [7, 8]
    assert json.loads(files[7]) == [
        {"kind": "memory", "content": "first", "mood": "calm"},
        {"kind": "memory", "created": "2025-01-01 00:00:01 UTC", "content": "second"},
    ]
    assert list(json.loads(files[7])[0]) == ["kind", "content", "mood"]
    assert json.loads(files[8]) == [
        {"id": made_here.entry_id, "kind": "memory", "content": "other partner", "creation_channel_id": 8}
    ]


@pytest.mark.django_db
def test_an_entry_id_from_the_file_is_the_memory_id_and_is_written_back_in_place():
    agent = AgentFactory()
    document = [{"kind": "memory", "id": "mem-7", "content": "Likes tea."}]
    parsed = parse_curated_memory_file(json.dumps(document), source=SRC)
    curated_memories_replace(
        agent=agent, partner_id=42, entries=parsed.entries, source_file="/c/42.json", content_hash="h"
    )

    assert Memory.objects.get(agent=agent).entry_id == "mem-7"
    assert json.loads(curated_memories_export(agent=agent)[42]) == document


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025-01-15", dt.datetime(2025, 1, 15, tzinfo=dt.UTC)),
        ("2025-01-15 14:30:00 PST", dt.datetime(2025, 1, 15, 22, 30, tzinfo=dt.UTC)),
        ("2025-07-04 09:00:00 EDT", dt.datetime(2025, 7, 4, 13, 0, tzinfo=dt.UTC)),
        (1736951400, dt.datetime(2025, 1, 15, 14, 30, tzinfo=dt.UTC)),
        (1736951400000, dt.datetime(2025, 1, 15, 14, 30, tzinfo=dt.UTC)),
    ],
)
def test_every_created_form_the_original_wrote_parses(raw, expected):
    assert parse_created(raw) == expected


def test_an_unreadable_created_is_kept_as_written_with_a_warning():
    warnings: list[str] = []
    [entry] = parse_curated_memories(
        json.dumps([{"content": "x", "created": "last Tuesday"}]), source=SRC, warnings=warnings
    )
    assert (entry["created"], entry["created_raw"]) == (None, "last Tuesday")
    assert warnings[0].startswith(f'{SRC}: entry 1 "created" is "last Tuesday": not a time Cindy can read')


def test_values_no_column_holds_are_kept_verbatim_with_a_warning():
    warnings: list[str] = []
    [entry] = parse_curated_memories(
        json.dumps([{"content": "x", "creation_channel_id": "123", "creation_channel": 5, "created": 17e8}]),
        source=SRC,
        warnings=warnings,
    )
    assert entry["extra"] == {"created": 17e8, "creation_channel": 5, "creation_channel_id": "123"}
    assert entry["created"] == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)
    assert len(warnings) == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    "document",
    [
        [],
        {"memory": []},
        {"version": 2, "memory": [{"kind": "memory", "content": "x", "creation_channel_id": None}], "z": 1},
        [{"kind": "memory", "created": 1736951400, "content": "y", "creation_channel": None}],
    ],
)
def test_every_file_shape_round_trips(document):
    agent = AgentFactory()
    parsed = parse_curated_memory_file(json.dumps(document), source=SRC)
    curated_memories_replace(
        agent=agent,
        partner_id=42,
        entries=parsed.entries,
        source_file="/c/42.json",
        content_hash="h",
        envelope=parsed.envelope,
    )
    assert json.loads(curated_memories_export(agent=agent)[42]) == document
