"""A broken file in an earlier config directory must not hide a valid one in a later directory."""

from __future__ import annotations

import json

import pytest

from agents.models import RolePrompt
from agents.tests.configdirs import HEIDI_MEMORIES, build_config_dirs, media_json, write
from cwimport.configdir.import_report import Outcome
from cwimport.configdir.importing import config_import
from media_catalog.models import MediaDescription
from memory.models import Memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


@pytest.fixture
def dirs(tmp_path):
    return build_config_dirs(tmp_path)


def test_an_empty_prompt_does_not_shadow_a_valid_one_in_a_later_directory(dirs, tmp_path):
    write(tmp_path / "one" / "prompts" / "Greeting.md", "  \n")
    write(tmp_path / "two" / "prompts" / "Greeting.md", "# Greeting\n\nSay hello.\n")

    report = config_import(dirs=dirs)

    assert report.by_path("one/prompts/Greeting.md").outcome == Outcome.ERROR
    assert report.by_path("two/prompts/Greeting.md").outcome == Outcome.CREATED
    prompt = RolePrompt.objects.get(agent=None, name="Greeting")
    assert prompt.text == "# Greeting\n\nSay hello.\n"
    assert prompt.source_file == str(tmp_path / "two" / "prompts" / "Greeting.md")


def test_a_broken_memory_file_does_not_shadow_a_valid_one(dirs, tmp_path):
    write(tmp_path / "one" / "agents" / "Heidi" / "memory" / "555.json", "[{not json")
    write(tmp_path / "two" / "agents" / "Heidi" / "memory" / "555.json", json.dumps(HEIDI_MEMORIES))

    report = config_import(dirs=dirs)

    assert report.by_path("one/agents/Heidi/memory/555.json").outcome == Outcome.ERROR
    assert report.by_path("two/agents/Heidi/memory/555.json").outcome == Outcome.CREATED
    assert Memory.objects.filter(agent__name="Heidi", partner_id=555).count() == len(HEIDI_MEMORIES)


def test_a_broken_media_file_does_not_shadow_a_valid_one(dirs, tmp_path):
    write(tmp_path / "one" / "media" / "U7.json", media_json("U7", ""))  # empty description
    write(tmp_path / "two" / "media" / "U7.json", media_json("U7", "Heidi claps."))

    report = config_import(dirs=dirs)

    assert report.by_path("one/media/U7.json").outcome == Outcome.ERROR
    assert report.by_path("two/media/U7.json").outcome == Outcome.CREATED
    assert MediaDescription.objects.get(unique_id="U7").description == "Heidi claps."


def test_a_valid_file_still_shadows_later_ones(dirs):
    report = config_import(dirs=dirs)

    assert report.by_path("two/media/U1.json").outcome == Outcome.SHADOWED
    assert report.by_path("two/prompts/Memory.md").outcome == Outcome.SHADOWED


def test_a_media_file_of_unknown_kind_imports_as_other_with_a_warning(dirs, tmp_path):
    data = {"unique_id": "U8", "kind": "hologram", "description": "A floating frog."}
    write(tmp_path / "one" / "media" / "U8.json", json.dumps(data))

    report = config_import(dirs=dirs)

    result = report.by_path("one/media/U8.json")
    assert result.outcome == Outcome.CREATED
    assert len(result.warnings) == 1 and '"kind" is "hologram"' in result.warnings[0]
    assert "one/media/U8.json" in result.warnings[0]
    row = MediaDescription.objects.get(unique_id="U8")
    assert (row.kind, row.extra) == ("other", {"kind": "hologram"})
