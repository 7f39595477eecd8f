from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from agents.models import Agent, RolePrompt
from agents.persona import PERSONA_FIELDS
from agents.tests.configdirs import build_config_dirs
from cwimport.configdir.exporting import config_export
from cwimport.configdir.importing import config_import, configured_dirs
from media_catalog.models import MediaDescription
from memory.models import Memory

pytestmark = pytest.mark.django_db

MEMORY_FIELDS = ("kind", "partner_id", "content", "created", "created_raw", "creation_channel")
MEMORY_FIELDS += ("creation_channel_id", "extra", "position")
MEDIA_FIELDS = ("kind", "sticker_set_name", "sticker_set_title", "sticker_name", "description", "status")
MEDIA_FIELDS += ("source", "mime", "duration", "extra")


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "storage"
    settings.TELEGRAM_API_ID = ""


def snapshot() -> dict:
    """Every imported value, field by field, keyed by natural keys (ids and paths differ between runs)."""
    return {
        "agents": {
            a.name: {f: getattr(a, f) for f in (*PERSONA_FIELDS, "transport")} for a in Agent.objects.all()
        },
        "prompts": {(p.agent.name if p.agent else None, p.name): p.text for p in RolePrompt.objects.all()},
        "memories": [
            (m.agent.name, *(getattr(m, f) for f in MEMORY_FIELDS))
            for m in Memory.objects.order_by("agent__name", "partner_id", "position")
        ],
        "media": {
            d.unique_id: ({f: getattr(d, f) for f in MEDIA_FIELDS}, Path(d.file.name).suffix, d.file.read())
            for d in MediaDescription.objects.all()
        },
    }


def wipe() -> None:
    for row in MediaDescription.objects.all():
        row.file.delete(save=False)
    MediaDescription.objects.all().delete()
    Agent.objects.all().delete()
    RolePrompt.objects.all().delete()


def test_import_export_reimport_is_lossless_field_by_field(tmp_path):
    config_import(dirs=build_config_dirs(tmp_path))
    before = snapshot()
    assert len(before["agents"]) == 3 and len(before["prompts"]) == 3
    assert len(before["memories"]) == 2 and len(before["media"]) == 2

    out = tmp_path / "exported"
    config_export(out_dir=out)
    wipe()
    report = config_import(dirs=configured_dirs([str(out)]))

    assert report.errors == []
    assert len(report.warnings) == 1 and 'unknown heading "Mood Board"' in report.warnings[0]
    after = snapshot()
    for section in before:
        assert after[section] == before[section], section


def test_export_writes_the_original_layout(tmp_path):
    config_import(dirs=build_config_dirs(tmp_path))
    out = tmp_path / "exported"
    stdout = io.StringIO()
    call_command("exportagents", str(out), stdout=stdout)

    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [
        "agents/Heidi.md",
        "agents/Heidi/memory/123456789.json",
        "agents/Heidi/prompts/Chatbot.md",
        "agents/Otto.md",
        "agents/Windows.md",
        "media/U1.json",
        "media/U1.webp",
        "media/U2.json",
        "media/U2.png",
        "prompts/Chatbot.md",
        "prompts/Memory.md",
    ]
    memories = json.loads((out / "agents/Heidi/memory/123456789.json").read_text())
    assert memories[0] == {
        "kind": "memory",
        "created": "2025-01-26 14:30:15 UTC",
        "content": "Has a younger sister named Sarah who studies abroad.",
        "creation_channel": "Alice",
        "creation_channel_id": 123456789,
        "confidence": 0.9,
        "tags": ["family"],
    }
    assert "3 persona, 2 prompt, 1 agent prompt, 1 memory, 2 media" in stdout.getvalue()


def test_the_samples_import_cleanly_and_round_trip(tmp_path):
    base = Path(django_settings.BASE_DIR)
    report = config_import(dirs=configured_dirs([str(base / "samples"), str(base / "configdir")]))

    assert report.errors == [] and report.warnings == []
    assert Agent.objects.count() >= 3
    assert {"Instructions", "Task-Memory", "Task-Plan", "Task-Retrieve", "Think"} <= set(
        RolePrompt.objects.filter(agent=None).values_list("name", flat=True)
    )
    assert MediaDescription.objects.filter(source="curated").exclude(file="").exists()
    assert any(a.sticker_set_names and a.explicit_stickers for a in Agent.objects.all())

    before = snapshot()
    config_export(out_dir=tmp_path / "out")
    wipe()
    config_import(dirs=configured_dirs([str(tmp_path / "out")]))
    assert snapshot() == before


def test_export_refuses_a_persona_that_would_not_read_back(tmp_path):
    config_import(dirs=build_config_dirs(tmp_path))
    Agent.objects.filter(name="Otto").update(instructions="Hello\n# Oops")
    with pytest.raises(CommandError, match='Otto: "Agent Instructions" has the line "# Oops"'):
        call_command("exportagents", str(tmp_path / "out"), stdout=io.StringIO())


def test_spend_limits_round_trip_through_export_and_import(tmp_path):
    from decimal import Decimal

    config_import(dirs=build_config_dirs(tmp_path))
    Agent.objects.filter(name="Heidi").update(
        daily_spend_cap=Decimal("2.50"), partner_turns_per_minute=3, partner_turns_per_day=200
    )
    out = tmp_path / "exported"
    config_export(out_dir=out)
    text = (out / "agents/Heidi.md").read_text()
    assert (
        "# Spend Limits\n\nDaily Cap USD: 2.50\nTurns Per Partner Per Minute: 3\nTurns Per Partner Per Day: 200\n"
        in text
    )
    assert "# Spend Limits" not in (out / "agents/Otto.md").read_text()
    wipe()
    report = config_import(dirs=configured_dirs([str(out)]))
    assert report.errors == []
    heidi = Agent.objects.get(name="Heidi")
    assert (heidi.daily_spend_cap, heidi.partner_turns_per_minute, heidi.partner_turns_per_day) == (
        Decimal("2.50"),
        3,
        200,
    )
