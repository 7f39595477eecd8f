"""The persona's optional `# Voice` section: read leniently, named in every warning, round-tripped."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from agents.models import Agent
from agents.persona import parse_persona, write_persona
from agents.tests.configdirs import build_config_dirs
from cwimport.configdir.exporting import config_export
from cwimport.configdir.importing import config_import

BASE = "# Agent Name\nVera\n\n# Agent Phone\n+15551234567\n\n# Agent Instructions\nBe kind.\n"


def persona(voice: str):
    return parse_persona(BASE + f"\n# Voice\n\n{voice}\n", source="agents/Vera.md")


def test_the_voice_and_language_are_read_and_written_back():
    read = persona("Voice: puck\nLanguage: de-DE")
    assert (read.voice_name, read.voice_language, read.warnings) == ("Puck", "de-DE", [])
    text = write_persona(read)
    assert "# Voice\n\nVoice: Puck\nLanguage: de-DE\n" in text
    assert parse_persona(text) == read


def test_an_elevenlabs_voice_id_is_kept_as_written():
    assert persona("Voice: 21m00Tcm4TlvDq8ikWAM").voice_name == "21m00Tcm4TlvDq8ikWAM"


def test_a_persona_without_a_voice_writes_no_voice_section():
    read = parse_persona(BASE, source="agents/Vera.md")
    assert (read.voice_name, read.voice_language) == ("", "")
    assert "# Voice" not in write_persona(read)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "Voice: Robotron",
            'agents/Vera.md: "Voice" line "Voice: Robotron": "Robotron" is not one of Gemini\'s voices nor '
            "an ElevenLabs voice id; ignored, the notes use CINDY_SPEECH_VOICE",
        ),
        (
            "Language: english please",
            'agents/Vera.md: "Voice" line "Language: english please": "english please" is not a BCP-47 '
            "language code; ignored: write e.g. en-GB or de-DE",
        ),
        (
            "Pitch: high",
            'agents/Vera.md: "Voice" line "Pitch: high" is not a known setting; ignored: write Voice: Kore '
            "and Language: en-GB",
        ),
    ],
)
def test_a_bad_voice_line_is_ignored_with_a_warning_naming_the_file_and_value(line, message):
    read = persona(f"{line}\nVoice: Kore")
    assert read.voice_name == "Kore"
    assert len(read.warnings) == 1 and read.warnings[0].startswith(message)


@pytest.mark.django_db
def test_the_voice_round_trips_through_export_and_import(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    config_import(dirs=build_config_dirs(tmp_path))
    Agent.objects.filter(name="Heidi").update(voice_name="Aoede", voice_language="en-US")
    out = tmp_path / "exported"
    config_export(out_dir=out)
    assert "# Voice\n\nVoice: Aoede\nLanguage: en-US\n" in (out / "agents/Heidi.md").read_text()
    Agent.objects.all().delete()
    call_command("importagents", str(out), stdout=io.StringIO())
    heidi = Agent.objects.get(name="Heidi")
    assert (heidi.voice_name, heidi.voice_language) == ("Aoede", "en-US")
