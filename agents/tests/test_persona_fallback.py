"""The persona's optional `# LLM Fallback` section: one LLM name a line, checked, round-tripped."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from agents.models import Agent
from agents.persona import parse_persona, write_persona
from agents.services.curation import agent_validate
from agents.tests.configdirs import build_config_dirs
from cwimport.configdir.exporting import config_export
from cwimport.configdir.importing import config_import

BASE = "# Agent Name\nVera\n\n# Agent Phone\n+15551234567\n\n# Agent Instructions\nBe kind.\n"


def persona(body: str):
    return parse_persona(BASE + f"\n# LLM Fallback\n\n{body}\n", source="agents/Vera.md")


def test_the_fallback_names_are_read_in_order_and_written_back():
    read = persona("gpt-5-mini\n  openrouter:anthropic/claude-sonnet-4.5\ngemini-2.5-flash")
    assert read.llm_fallback == ["gpt-5-mini", "openrouter:anthropic/claude-sonnet-4.5", "gemini-2.5-flash"]
    assert read.warnings == []
    text = write_persona(read)
    assert "# LLM Fallback\n\ngpt-5-mini\nopenrouter:anthropic/claude-sonnet-4.5\ngemini-2.5-flash\n" in text
    assert parse_persona(text) == read


def test_a_persona_without_a_fallback_writes_no_fallback_section():
    read = parse_persona(BASE, source="agents/Vera.md")
    assert read.llm_fallback == []
    assert "# LLM Fallback" not in write_persona(read)


def test_an_unknown_name_is_skipped_with_a_warning_naming_the_file_and_value():
    read = persona("gpt-5-mini\nllama-3-opus\nnone")
    assert read.llm_fallback == ["gpt-5-mini"]
    assert read.warnings[0].startswith(
        'agents/Vera.md: "LLM Fallback" line "llama-3-opus": LLM "llama-3-opus" is not a known name'
    )
    assert read.warnings[0].endswith("; the line is skipped")
    assert read.warnings[1].startswith('agents/Vera.md: "LLM Fallback" line "none" names no LLM')


@pytest.mark.django_db
def test_a_stored_fallback_with_an_unknown_name_does_not_validate():
    agent = Agent(name="Vera", phone="+15551234567", instructions="Be kind.", llm_fallback=["gpt", "llama"])
    with pytest.raises(ValidationError) as raised:
        agent_validate(agent=agent)
    assert 'LLM "llama" is not a known name' in str(raised.value.message_dict["llm_fallback"])


@pytest.mark.django_db
def test_the_fallback_round_trips_through_export_and_import(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    config_import(dirs=build_config_dirs(tmp_path))
    Agent.objects.filter(name="Heidi").update(llm_fallback=["gpt-5-mini", "grok"])
    out = tmp_path / "exported"
    config_export(out_dir=out)
    assert "# LLM Fallback\n\ngpt-5-mini\ngrok\n" in (out / "agents/Heidi.md").read_text()
    Agent.objects.all().delete()
    call_command("importagents", str(out), stdout=io.StringIO())
    assert Agent.objects.get(name="Heidi").llm_fallback == ["gpt-5-mini", "grok"]
