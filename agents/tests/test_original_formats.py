"""An existing cw-telegram-agent config directory imports unchanged, and exports back the same way."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from agents.models import Agent, AgentDocument
from agents.selectors import agent_document
from agents.tests.original_formats import LLM_NAMES, MEDIA, QUIRKY_WARNINGS, build_original_dirs
from cwimport.configdir.exporting import config_export
from cwimport.configdir.import_report import Outcome
from cwimport.configdir.importing import ConfigDir, config_import
from llm.routing import route_for
from media_catalog.models import MediaDescription
from memory.models import CuratedMemoryFile, Memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


@pytest.fixture
def dirs(tmp_path, settings):
    settings.DEFAULT_AGENT_LLM = "gemini"
    return build_original_dirs(tmp_path)


def warnings_of(report, suffix: str) -> list[str]:
    return report.by_path(suffix).warnings


def test_the_original_directories_import_with_no_errors_and_the_expected_warnings(dirs):
    report = config_import(dirs=dirs)

    assert [r.detail for r in report.errors] == []
    quincy = warnings_of(report, "configdir/agents/quincy.md")
    assert len(quincy) == len(QUIRKY_WARNINGS)
    for expected in QUIRKY_WARNINGS:
        assert any(w.startswith(f"configdir/agents/quincy.md: {expected}") for w in quincy), expected
    olivia_memory = warnings_of(report, "samples/agents/olivia/memory/4242.json")
    assert olivia_memory == [
        'samples/agents/olivia/memory/4242.json: entry 3 "created" is "sometime in spring": not a time Cindy '
        "can read; it is kept as written but the memory has no date: write e.g. 2025-01-26 14:30:15 UTC"
    ]
    undescribed = warnings_of(report, "configdir/media/773947703670341882.json")
    assert undescribed == [
        "configdir/media/773947703670341882.json: no description: the agent sees this media as undescribed; "
        "write one"
    ]
    noisy = {r.path for r in report.results if r.warnings}
    assert noisy == {
        "configdir/agents/quincy.md",
        "samples/agents/olivia/memory/4242.json",
        "configdir/media/773947703670341882.json",
    }


def test_personas_read_every_field_as_the_original_does(dirs):
    config_import(dirs=dirs)

    heidi = Agent.objects.get(config_name="Heidi")
    assert (heidi.start_typing_delay, heidi.typing_speed) == (3.5, 8.0)
    assert heidi.timezone == "America/Los_Angeles" and heidi.llm == "gemini"
    assert heidi.role_prompt_names == ["Chatbot", "Person"]
    assert heidi.daily_schedule.startswith("Heidi is twelve.")
    assert heidi.instructions.endswith("Read file:Friends.md when someone mentions a friend by name.")
    wendy = Agent.objects.get(config_name="Wendy")
    assert (wendy.name, wendy.start_typing_delay, wendy.typing_speed) == ("Wendy", 5.0, 1000.0)
    assert wendy.explicit_stickers == ["WendyDancer::👋", "WendyDancer::💃"]
    assert wendy.telegram_id == 7100200300
    olivia = Agent.objects.get(config_name="olivia")
    assert (olivia.name, olivia.phone) == ("Olivia Stone", "+1 (555) 010-7003")
    assert (olivia.disabled, olivia.gagged, olivia.reset_context_on_first_message) == (True, True, True)
    assert olivia.flag_notes == {"Disabled": "Paused while her storyline is rewritten."}
    quincy = Agent.objects.get(config_name="quincy")
    assert (quincy.timezone, quincy.llm, quincy.telegram_id) == ("Mars/Olympus_Mons", "", None)
    assert (quincy.start_typing_delay, quincy.typing_speed) == (None, None)
    assert quincy.explicit_stickers == ["QuincySet::🙂"]
    assert quincy.role_prompt_names == ["Person"]
    assert quincy.daily_schedule == "Sleeps whenever the mood strikes, usually after midnight."


def test_identity_is_the_file_stem_so_a_later_wendy_is_shadowed_whatever_its_name(dirs):
    report = config_import(dirs=dirs)

    result = report.by_path("configdir/agents/Wendy.md")
    assert result.outcome == Outcome.SHADOWED
    assert "samples/agents/Wendy.md" in result.detail
    assert not Agent.objects.filter(name="Wendy the Second").exists()


def test_every_llm_name_of_the_original_imports_and_routes_the_same_way(dirs):
    config_import(dirs=dirs)

    for index, (name, route) in enumerate(LLM_NAMES.items()):
        agent = Agent.objects.get(config_name=f"model-{index:02d}")
        assert agent.llm == ("" if name in ("", "none") else name)
        expected = route or ("gemini", "gemini-3-flash-preview")  # DEFAULT_AGENT_LLM is "gemini"
        chosen = route_for(agent_llm=agent.llm)
        assert (chosen.provider, chosen.model) == expected, name


def test_agent_documents_and_memories_of_both_forms_import_into_the_stems_folder(dirs):
    config_import(dirs=dirs)

    heidi = Agent.objects.get(config_name="Heidi")
    assert agent_document(agent_id=heidi.pk, name="Friends") == agent_document(
        agent_id=heidi.pk, name="Friends.md"
    )
    assert "Peter looks after the goats" in agent_document(agent_id=heidi.pk, name="Friends.md")
    [locket] = Memory.objects.filter(agent=heidi, partner_id=6754281260)
    assert (locket.created_raw, locket.created) == ("2025-11-06", dt.datetime(2025, 11, 6, tzinfo=dt.UTC))
    olivia = Agent.objects.get(config_name="olivia")
    storm, tea, dog = Memory.objects.filter(agent=olivia, partner_id=4242).order_by("position")
    assert storm.created == dt.datetime(2025, 1, 15, 22, 30, tzinfo=dt.UTC)  # 14:30 PST
    assert storm.created_raw == "2025-01-15 14:30:00 PST"
    assert storm.extra == {"creation_channel_id": None, "id": "mem-1"}
    assert storm.entry_id == "mem-1"  # what a remember task with id "mem-1" updates
    assert (tea.created, tea.extra) == (
        dt.datetime(2025, 1, 15, 14, 30, tzinfo=dt.UTC),
        {"created": 1736951400},
    )
    assert (dog.created, dog.created_raw) == (None, "sometime in spring")
    envelope = CuratedMemoryFile.objects.get(agent=olivia, partner_id=4242).envelope
    assert envelope == {"version": 2, "memory": None, "updated_by": "admin console"}
    assert CuratedMemoryFile.objects.filter(agent=olivia, partner_id=4343).exists()


def test_media_of_every_kind_imports_with_the_original_keys(dirs):
    config_import(dirs=dirs)

    kinds = dict(MediaDescription.objects.values_list("unique_id", "kind"))
    assert set(kinds) == set(MEDIA)
    assert set(kinds.values()) == {
        "sticker", "animated_sticker", "video_sticker", "photo", "gif", "video", "audio", "voice", "document",
        "other",
    }  # fmt: skip
    assert kinds["4933946236969094022"] == "other"  # no kind, as in the original's samples
    sticker = MediaDescription.objects.get(unique_id="5109398279530679154")
    assert (sticker.mime, sticker.duration, sticker.sticker_set_title) == ("image/webp", None, "Wendy Dancer")
    assert sticker.file.read() == Path(sticker.file.path).read_bytes()
    animated = MediaDescription.objects.get(unique_id="5109398279530679155")
    assert (animated.duration, animated.extra) == (3.0, {"duration": 3})
    photo = MediaDescription.objects.get(unique_id="773947703670341876")
    assert photo.extra == {"status": "ok", "description_retry_count": 0, "sender_id": 6765630192,
                           "channel_name": "Cooking club"}  # fmt: skip


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _wipe() -> None:
    Agent.objects.all().delete()
    MediaDescription.objects.all().delete()


def test_import_export_import_export_is_byte_identical(dirs, tmp_path):
    config_import(dirs=dirs)
    first = tmp_path / "first"
    config_export(out_dir=first)
    _wipe()
    assert config_import(dirs=[ConfigDir("first", first)]).errors == []
    second = tmp_path / "second"
    config_export(out_dir=second)

    assert _tree(first) == _tree(second)
    assert "agents/olivia.md" in _tree(first)  # written back under its stem, not its name
    assert "agents/Heidi/docs/Friends.md" in _tree(first)
    assert json.loads((first / "agents" / "olivia" / "memory" / "4343.json").read_text()) == []


def test_the_first_media_export_differs_from_the_source_only_in_whitespace(dirs, tmp_path):
    config_import(dirs=dirs)
    config_export(out_dir=tmp_path / "out")

    for unique_id, source in MEDIA.items():
        exported = (tmp_path / "out" / "media" / f"{unique_id}.json").read_text(encoding="utf-8")
        assert re.sub(r"\s", "", exported) == re.sub(r"\s", "", source), unique_id
    source_memory = (dirs[0].path / "agents" / "olivia" / "memory" / "4242.json").read_text()
    exported_memory = (tmp_path / "out" / "agents" / "olivia" / "memory" / "4242.json").read_text()
    assert json.loads(exported_memory) == json.loads(source_memory)


def test_flag_text_and_float_typing_values_are_exported(dirs, tmp_path):
    config_import(dirs=dirs)
    config_export(out_dir=tmp_path / "out")

    olivia = (tmp_path / "out" / "agents" / "olivia.md").read_text()
    assert "# Disabled\n\nPaused while her storyline is rewritten.\n" in olivia
    heidi = (tmp_path / "out" / "agents" / "Heidi.md").read_text()
    assert "# Start Typing Delay\n\n3.5\n" in heidi and "# Typing Speed\n\n8\n" in heidi


def test_a_dry_run_of_the_original_directories_writes_nothing(dirs, media_root, settings):
    report = config_import(dirs=dirs, dry_run=True)

    assert report.errors == [] and report.counts()[Outcome.CREATED] > 0
    assert not Agent.objects.exists() and not AgentDocument.objects.exists()
    assert not CuratedMemoryFile.objects.exists() and not MediaDescription.objects.exists()
    assert not Path(settings.MEDIA_ROOT).exists()
