"""Import input an operator gets wrong, or an attacker crafts: each is a clear message, never a traceback."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from agents.models import Agent
from agents.persona import MAX_SECTION_CHARS
from agents.tests.configdirs import write
from cindy_site.testing.factories import AgentFactory
from cwimport.configdir.import_report import Outcome
from cwimport.configdir.importing import config_import, configured_dirs

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


def persona(name: str, phone: str, instructions: str = "Be kind.", **sections: str) -> str:
    extra = "".join(f"# {heading}\n{body}\n\n" for heading, body in sections.items())
    return f"# Agent Name\n{name}\n\n# Agent Phone\n{phone}\n\n{extra}# Agent Instructions\n{instructions}\n"


def run(tmp_path, files: dict[str, str]):
    for relative, text in files.items():
        write(tmp_path / "c" / relative, text)
    return config_import(dirs=configured_dirs([str(tmp_path / "c")]))


def test_a_telegram_id_of_ten_to_the_thirty_is_a_warning_not_a_traceback(tmp_path):
    report = run(tmp_path, {"agents/Big.md": persona("Big", "+15550001", **{"Telegram ID": str(10**30)})})

    assert report.errors == []
    [warning] = report.by_path("agents/Big.md").warnings
    assert '"Telegram ID" is "1000000000000000000000000000000": outside 1 to 9223372036854775807' in warning
    assert Agent.objects.get(name="Big").telegram_id is None


def test_a_nul_inside_a_name_is_refused(tmp_path):
    report = run(tmp_path, {"agents/Nul.md": persona("Nu\x00ll", "+15550001")})

    [error] = report.errors
    assert error.detail.endswith('"Agent Name" contains the control character U+0000: remove it')
    assert not Agent.objects.exists()


def test_two_personas_with_the_same_phone_both_import_with_one_warning_naming_both(tmp_path):
    report = run(
        tmp_path,
        {"agents/Anna.md": persona("Anna", "+1 555 0001"), "agents/Bert.md": persona("Bert", "+15550001")},
    )

    assert report.errors == []
    assert report.by_path("agents/Bert.md").outcome == Outcome.CREATED
    [warning] = report.warnings
    assert '"Agent Phone" +1 555 0001 is shared by' in warning
    assert "agents/Anna.md (enabled)" in warning and "agents/Bert.md (enabled)" in warning
    assert list(Agent.objects.values_list("name", flat=True)) == ["Anna", "Bert"]


def test_a_phone_already_used_by_an_agent_made_in_the_admin_is_a_warning_naming_it(tmp_path):
    AgentFactory(name="Manual", phone="+15550001", disabled=True)

    report = run(tmp_path, {"agents/Anna.md": persona("Anna", "+15550001")})

    assert report.errors == []
    [warning] = report.warnings
    assert "agent Manual (made in the admin) (disabled)" in warning
    assert warning.endswith("keep at most one of them enabled (enabled now: Anna)")


def test_two_stems_with_the_same_agent_name_the_second_is_an_error(tmp_path):
    report = run(
        tmp_path,
        {"agents/anna.md": persona("Anna", "+15550001"), "agents/anna2.md": persona("Anna", "+15550002")},
    )

    [error] = report.errors
    assert error.path.endswith("agents/anna2.md")
    assert '"Agent Name" Anna is already used by' in error.detail


def test_ten_megabytes_of_instructions_are_refused_with_the_limit(tmp_path):
    report = run(tmp_path, {"agents/Huge.md": persona("Huge", "+15550001", "word " * 2_000_000)})

    [error] = report.errors
    assert (
        "more than the 1,048,576 bytes a persona file may have (CINDY_IMPORT_MAX_PERSONA_BYTES)"
        in error.detail
    )
    assert not Agent.objects.exists()


def test_a_section_longer_than_its_limit_is_refused_with_the_limit(tmp_path):
    report = run(tmp_path, {"agents/Long.md": persona("Long", "+15550001", "word " * 30_000)})

    [error] = report.errors
    assert f"at most {MAX_SECTION_CHARS:,} are accepted" in error.detail
    assert not Agent.objects.exists()


def test_a_renamed_persona_keeps_its_agent_because_the_stem_is_its_identity(tmp_path):
    run(tmp_path, {"agents/heidi.md": persona("Heidi", "+15550001")})
    first = Agent.objects.get()

    run(tmp_path, {"agents/heidi.md": persona("Heidi Klum", "+15550001")})

    again = Agent.objects.get()
    assert (again.pk, again.name, again.config_name) == (first.pk, "Heidi Klum", "heidi")


def test_config_path_entries_are_stripped_of_spaces(tmp_path, settings):
    write(tmp_path / "one" / "agents" / "A.md", persona("A", "+15550001"))
    write(tmp_path / "two" / "agents" / "B.md", persona("B", "+15550002"))
    settings.CINDY_AGENT_CONFIG_PATH = f" {tmp_path / 'one'} : {tmp_path / 'two'} :  "

    dirs = configured_dirs()

    assert [d.path for d in dirs] == [(tmp_path / "one").resolve(), (tmp_path / "two").resolve()]
    assert config_import(dirs=dirs).errors == []


def test_importagents_dry_run_writes_nothing_and_says_so(tmp_path):
    write(tmp_path / "c" / "agents" / "A.md", persona("A", "+15550001"))
    write(tmp_path / "c" / "agents" / "A" / "docs" / "Notes.md", "Some notes.\n")
    out = io.StringIO()

    call_command("importagents", "--dry-run", str(tmp_path / "c"), stdout=out, stderr=io.StringIO())

    assert "Dry run, nothing saved: 2 files: 2 created" in out.getvalue()
    assert not Agent.objects.exists()
