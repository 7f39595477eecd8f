"""The persona's optional `# Recall Across Chats` section: `off` or `DMs`, anything else refused."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from agents.models import Agent
from agents.persona import PersonaError, parse_persona, write_persona
from agents.tests.configdirs import build_config_dirs
from cwimport.configdir.exporting import config_export
from cwimport.configdir.importing import config_import

BASE = "# Agent Name\nVera\n\n# Agent Phone\n+15551234567\n\n# Agent Instructions\nBe kind.\n"


def persona(body: str):
    return parse_persona(BASE + f"\n# Recall Across Chats\n\n{body}\n", source="agents/Vera.md")


def test_it_is_off_without_the_heading_and_writes_no_section():
    read = parse_persona(BASE, source="agents/Vera.md")
    assert read.recall_across_chats == "off"
    assert "Recall Across Chats" not in write_persona(read)


@pytest.mark.parametrize("written", ["DMs", "dms", "  DMS "])
def test_dms_is_read_whatever_its_case_and_written_back_as_dms(written):
    read = persona(written)
    assert read.recall_across_chats == "dms" and read.warnings == []
    text = write_persona(read)
    assert "# Recall Across Chats\n\nDMs\n" in text
    assert parse_persona(text) == read


def test_off_written_out_reads_as_the_default():
    read = persona("off")
    assert read.recall_across_chats == "off" and read.warnings == []
    assert parse_persona(write_persona(read)) == read == parse_persona(BASE)


@pytest.mark.parametrize("value", ["all", "yes", "", "DMs and groups"])
def test_another_value_is_refused_naming_the_file_heading_value_and_the_allowed_values(value):
    with pytest.raises(PersonaError) as raised:
        persona(value)
    assert raised.value.errors == [
        f'agents/Vera.md: "Recall Across Chats" is "{value}", which is not an allowed value: '
        "write off or DMs (or leave the heading out: off)"
    ]


@pytest.mark.django_db
def test_the_setting_round_trips_through_export_and_import(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    config_import(dirs=build_config_dirs(tmp_path))
    assert Agent.objects.get(name="Heidi").recall_across_chats == "off"
    Agent.objects.filter(name="Heidi").update(recall_across_chats="dms")
    out = tmp_path / "exported"
    config_export(out_dir=out)
    assert "# Recall Across Chats\n\nDMs\n" in (out / "agents/Heidi.md").read_text()
    Agent.objects.all().delete()
    call_command("importagents", str(out), stdout=io.StringIO())
    assert Agent.objects.get(name="Heidi").recall_across_chats == "dms"
