from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.core.management import CommandError, call_command

from agents.models import Agent, RolePrompt
from agents.selectors import role_prompt_for, role_prompts_for_agent
from agents.tests.configdirs import PNG_BYTES, WEBP_BYTES, build_config_dirs, write
from cindy_site.testing.factories import MediaDescriptionFactory
from cwimport.configdir.import_report import Outcome
from cwimport.configdir.importing import config_import, configured_dirs
from media_catalog.models import MediaDescription
from memory.models import Memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


@pytest.fixture
def dirs(tmp_path):
    return build_config_dirs(tmp_path)


def test_import_creates_the_expected_rows(dirs):
    report = config_import(dirs=dirs)

    assert sorted(Agent.objects.values_list("name", flat=True)) == ["Heidi", "Otto", "Windows"]
    heidi = Agent.objects.get(name="Heidi")
    assert heidi.phone == "+15551230001"
    assert heidi.role_prompt_names == ["Chatbot", "Memory"]
    assert heidi.explicit_stickers == ["PartySet::🎉"]
    assert heidi.gagged is True and heidi.disabled is False
    assert heidi.answer_bots is True
    assert heidi.extra_sections == [["Mood Board", "Sunny, with a chance of puns."]]
    assert (
        heidi.instructions == "You are Heidi. Talk to {user} like an old friend.\n\n## Tone\nWarm and brief."
    )
    assert heidi.transport == "sandbox"
    assert heidi.config_dir == str(dirs[0].path)
    assert heidi.source_file == str(dirs[0].path / "agents" / "Heidi.md")
    assert len(heidi.content_hash) == 64
    assert report.by_path("two/agents/Heidi.md").outcome == Outcome.SHADOWED
    assert "one/agents/Heidi.md" in report.by_path("two/agents/Heidi.md").detail


def test_crlf_persona_is_normalised(dirs):
    config_import(dirs=dirs)
    windows = Agent.objects.get(name="Windows")
    assert windows.phone == "+15551230002"
    assert windows.instructions == "Hello {user}.\n\n## Details\nWritten on Windows."


def test_broken_persona_gives_exactly_one_clear_error_and_the_rest_imports(dirs):
    report = config_import(dirs=dirs)
    assert [r.path for r in report.errors] == ["one/agents/Broken.md"]
    assert (
        report.errors[0].detail
        == 'one/agents/Broken.md: "Agent Phone" is missing: add a "# Agent Phone" section'
    )
    assert not Agent.objects.filter(name="Broken").exists()


def test_command_prints_a_table_and_fails_when_a_file_failed(dirs):
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 error, 1 warning"):
        call_command("importagents", str(dirs[0].path), str(dirs[1].path), stdout=out, stderr=err)
    table = out.getvalue()
    assert table.splitlines()[0].split() == ["FILE", "KIND", "RESULT", "DETAIL"]
    assert "agents/Otto.md" in table and "created" in table and "shadowed" in table
    assert '"Agent Phone" is missing' in err.getvalue()
    assert 'unknown heading "Mood Board"' in err.getvalue()


def test_prompt_precedence_agent_override_then_earlier_directory(dirs):
    report = config_import(dirs=dirs)
    heidi, otto = Agent.objects.get(name="Heidi"), Agent.objects.get(name="Otto")

    assert role_prompt_for(agent=heidi, name="Chatbot").text == "# Chatbot\n\nHeidi's own chat style.\n"
    assert role_prompt_for(agent=otto, name="Chatbot").text == "# Chatbot\n\nBe a good chat partner.\n"
    assert RolePrompt.objects.get(agent=None, name="Memory").text == "# Memory\n\nRemember what matters.\n"
    assert RolePrompt.objects.get(agent=None, name="Memory").origin_dir == str(dirs[0].path)
    assert report.by_path("two/prompts/Memory.md").outcome == Outcome.SHADOWED
    assert [p.text.splitlines()[-1] for p in role_prompts_for_agent(agent=heidi)] == [
        "Heidi's own chat style.",
        "Remember what matters.",
    ]


def test_curated_memories_keep_order_raw_dates_and_extra_fields(dirs):
    config_import(dirs=dirs)
    memories = list(Memory.objects.filter(agent__name="Heidi").order_by("position"))
    assert [m.kind for m in memories] == [Memory.Kind.CURATED] * 2
    assert {m.partner_id for m in memories} == {123456789}
    first = memories[0]
    assert first.content == "Has a younger sister named Sarah who studies abroad."
    assert first.created == dt.datetime(2025, 1, 26, 14, 30, 15, tzinfo=dt.UTC)
    assert first.created_raw == "2025-01-26 14:30:15 UTC"
    assert (first.creation_channel, first.creation_channel_id) == ("Alice", 123456789)
    assert first.extra == {"confidence": 0.9, "tags": ["family"]}
    assert memories[1].extra == {}


def test_curated_media_with_files_and_directory_precedence(dirs, media_root):
    MediaDescriptionFactory(unique_id="U2", kind="photo", description="AI guess", source="ai", status="ok")
    report = config_import(dirs=dirs)

    u1 = MediaDescription.objects.get(unique_id="U1")
    assert u1.description == "Heidi waves hello."
    assert (u1.source, u1.status) == ("curated", "curated")
    assert u1.file.name.endswith(".webp") and u1.file.read() == WEBP_BYTES
    assert report.by_path("two/media/U1.json").outcome == Outcome.SHADOWED

    u2 = MediaDescription.objects.get(unique_id="U2")
    assert report.by_path("two/media/U2.json").outcome == Outcome.UPDATED  # the AI row is overwritten
    assert (u2.description, u2.source, u2.status) == ("A lighthouse at dusk.", "curated", "curated")
    assert u2.extra == {"status": "ok", "photographer": "unknown"}
    assert u2.file.read() == PNG_BYTES
    assert (media_root / u2.file.name).is_file()


def test_second_run_reports_everything_unchanged_and_keeps_admin_edits(dirs):
    first = config_import(dirs=dirs)
    Agent.objects.filter(name="Otto").update(instructions="Edited in the admin", transport="telegram")
    second = config_import(dirs=dirs)

    outcomes = {r.path: r.outcome for r in second.results}
    expected = {
        r.path: (r.outcome if r.outcome in ("shadowed", "error") else "unchanged") for r in first.results
    }
    assert outcomes == expected
    otto = Agent.objects.get(name="Otto")
    assert (otto.instructions, otto.transport) == ("Edited in the admin", "telegram")


def test_changed_file_updates_only_its_own_rows(dirs):
    config_import(dirs=dirs)
    before = {a.name: a.updated for a in Agent.objects.all()}
    memory_file = dirs[0].path / "agents" / "Heidi" / "memory" / "123456789.json"
    write(memory_file, json.dumps([{"kind": "memory", "content": "Now only this."}]))

    report = config_import(dirs=dirs)

    changed = {
        r.path: r.outcome for r in report.results if r.outcome not in ("unchanged", "shadowed", "error")
    }
    assert changed == {"one/agents/Heidi/memory/123456789.json": Outcome.UPDATED}
    assert list(Memory.objects.filter(agent__name="Heidi").values_list("content", flat=True)) == [
        "Now only this."
    ]
    assert {a.name: a.updated for a in Agent.objects.all()} == before


def test_changed_persona_updates_its_fields_but_keeps_the_operators_transport(dirs):
    config_import(dirs=dirs)
    Agent.objects.filter(name="Otto").update(transport="telegram", telegram_user_id=42)
    otto_file = dirs[1].path / "agents" / "Otto.md"
    write(otto_file, otto_file.read_text().replace("You are Otto.", "You are Otto, a sailor."))

    report = config_import(dirs=dirs)

    assert report.by_path("two/agents/Otto.md").outcome == Outcome.UPDATED
    assert report.by_path("two/agents/Otto.md").detail == "Otto: instructions changed"
    otto = Agent.objects.get(name="Otto")
    assert (otto.instructions, otto.transport, otto.telegram_user_id) == (
        "You are Otto, a sailor.",
        "telegram",
        42,
    )


def test_new_agents_use_telegram_when_api_credentials_are_configured(dirs, settings):
    settings.TELEGRAM_API_ID = "12345"
    settings.TELEGRAM_API_HASH = "abcdef"
    config_import(dirs=dirs)
    assert set(Agent.objects.values_list("transport", flat=True)) == {"telegram"}


def test_dry_run_reports_but_saves_nothing(dirs, media_root):
    report = config_import(dirs=dirs, dry_run=True)
    assert report.counts()[Outcome.CREATED] == 9
    assert report.summary().startswith("Dry run, nothing saved:")
    assert not Agent.objects.exists() and not MediaDescription.objects.exists()
    assert not media_root.exists()


def test_files_for_an_unknown_agent_are_errors_naming_the_fix(tmp_path):
    write(tmp_path / "c" / "agents" / "Ghost" / "prompts" / "Chatbot.md", "Boo.\n")
    report = config_import(dirs=configured_dirs([str(tmp_path / "c")]))
    assert len(report.errors) == 1
    assert 'no agent for the folder "Ghost": add agents/Ghost.md' in report.errors[0].detail


def test_bad_memory_file_name_and_bad_json_are_reported_per_file(dirs):
    folder = dirs[0].path / "agents" / "Heidi" / "memory"
    write(folder / "alice.json", "[]")
    write(folder / "42.json", "[{")
    report = config_import(dirs=dirs)
    assert "is not a Telegram user id" in report.by_path("memory/alice.json").detail
    assert "not valid JSON" in report.by_path("memory/42.json").detail
    assert Memory.objects.filter(agent__name="Heidi").count() == 2


def test_missing_config_directory_is_an_error(tmp_path):
    report = config_import(dirs=configured_dirs([str(tmp_path / "nope")]))
    assert "config directory not found" in report.errors[0].detail


def test_missing_role_prompt_is_a_warning(tmp_path):
    write(
        tmp_path / "c" / "agents" / "Solo.md",
        "# Agent Name\nSolo\n# Agent Phone\n+15550001\n# Role Prompt\nNowhere\n# Agent Instructions\nHi.\n",
    )
    report = config_import(dirs=configured_dirs([str(tmp_path / "c")]))
    assert report.warnings == [
        f'{tmp_path}/c/agents/Solo.md: "Role Prompt" names Nowhere but no such prompt exists: '
        "add prompts/<name>.md or agents/Solo/prompts/<name>.md, or remove the line"
    ]


def test_progress_is_shown_on_stderr_for_large_media_dirs(tmp_path):
    for n in range(25):
        write(
            tmp_path / "c" / "media" / f"M{n}.json",
            json.dumps({"unique_id": f"M{n}", "kind": "photo", "description": f"Photo {n}"}),
        )
    err = io.StringIO()
    call_command("importagents", str(tmp_path / "c"), stdout=io.StringIO(), stderr=err)
    assert "media 25/25 (100%)" in err.getvalue()
    assert MediaDescription.objects.count() == 25


def test_default_dirs_come_from_the_setting_and_resolve_under_base_dir(settings, tmp_path, monkeypatch):
    settings.CINDY_AGENT_CONFIG_PATH = "samples:configdir"
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()

    call_command("importagents", stdout=out, stderr=err)

    assert [d.display for d in configured_dirs()] == ["samples", "configdir"]
    assert "samples/agents/" in out.getvalue() and "configdir/prompts/Instructions.md" in out.getvalue()
    assert out.getvalue().rstrip().splitlines()[-1].endswith("0 errors, 0 warnings")
    assert err.getvalue() == ""


def test_a_persona_with_a_misspelt_required_heading_still_reports_its_other_misspelt_headings(tmp_path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "Typo.md").write_text(
        "# Agent Name\nTypo\n\n# Agent Phone\n+15551230099\n\n# Agent Instrutions\nBe kind.\n\n"
        "# Role Promt\nChatbot\n"
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 error, 2 warnings"):
        call_command("importagents", str(tmp_path), stdout=out, stderr=err)
    errors = err.getvalue()
    assert 'did you mean "# Agent Instructions"?' in errors
    assert (
        f'{tmp_path}/agents/Typo.md: unknown heading "# Role Promt": did you mean "# Role Prompt"?' in errors
    )
