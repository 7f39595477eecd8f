"""The original's samples as shipped: three disabled personas on one placeholder phone import cleanly."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from agents.models import Agent, AgentDocument
from agents.tests.shipped_samples import SHARED_PHONE, build_shipped_dirs
from cwimport.configdir.import_report import Outcome
from cwimport.configdir.importing import config_import

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


def test_the_shipped_samples_import_with_one_warning_for_the_shared_phone(tmp_path):
    dirs = build_shipped_dirs(tmp_path)

    report = config_import(dirs=dirs)

    assert [r.detail for r in report.errors] == []
    personas = [r for r in report.results if r.kind == "persona"]
    assert [(r.path, r.outcome) for r in personas] == [
        ("samples/agents/GameMaster.md", Outcome.CREATED),
        ("samples/agents/Heidi.md", Outcome.CREATED),
        ("samples/agents/Martha.md", Outcome.CREATED),
    ]
    assert report.by_path("agents/Heidi/docs/Friends.md").outcome == Outcome.CREATED
    [warning] = report.warnings
    assert warning == (
        f'samples/agents/GameMaster.md: "Agent Phone" {SHARED_PHONE} is shared by '
        "samples/agents/GameMaster.md (disabled), samples/agents/Heidi.md (disabled), "
        "samples/agents/Martha.md (disabled): one Telegram account runs one persona at a time; keep at most "
        "one of them enabled (enabled now: none)"
    )


def test_every_field_of_the_shipped_samples_is_read_as_the_original_reads_it(tmp_path):
    config_import(dirs=build_shipped_dirs(tmp_path))

    fields = (
        "phone", "timezone", "llm", "role_prompt_names", "sticker_set_names", "disabled",
        "reset_context_on_first_message", "start_typing_delay", "typing_speed", "flag_notes",
        "extra_sections",
    )  # fmt: skip
    read = {a.name: {f: getattr(a, f) for f in fields} for a in Agent.objects.all()}
    assert read == {
        "GameMaster": {
            "phone": SHARED_PHONE, "timezone": "", "llm": "", "role_prompt_names": ["Adventure"],
            "sticker_set_names": [], "disabled": True, "reset_context_on_first_message": True,
            "start_typing_delay": None, "typing_speed": None,
            "flag_notes": {"Reset Context On First Message": "Every new quest starts from a blank map."},
            "extra_sections": [],
        },
        "Heidi": {
            "phone": SHARED_PHONE, "timezone": "America/Los_Angeles", "llm": "",
            "role_prompt_names": ["Task-Memory", "Task-Retrieve", "Task-Photo", "Task-Plan", "Person"],
            "sticker_set_names": ["GoatPals"], "disabled": True, "reset_context_on_first_message": False,
            "start_typing_delay": 8.0, "typing_speed": 5.0, "flag_notes": {}, "extra_sections": [],
        },
        "Martha": {
            "phone": SHARED_PHONE, "timezone": "", "llm": "", "role_prompt_names": ["Roleplay"],
            "sticker_set_names": ["TeaTime"], "disabled": True, "reset_context_on_first_message": True,
            "start_typing_delay": 4.0, "typing_speed": 1000.0,
            "flag_notes": {"Reset Context On First Message": "Each visit feels like the first."},
            "extra_sections": [],
        },
    }  # fmt: skip
    gm = Agent.objects.get(name="GameMaster")
    assert gm.instructions.startswith("You run a text adventure for {user}.\n\n## Scenario\n")
    assert gm.instructions.endswith(
        '## First Message\n\n"The ferry leaves you on the pier. The lamp above is dark."'
    )
    heidi = Agent.objects.get(name="Heidi")
    assert heidi.daily_schedule.startswith("School on weekdays")
    assert AgentDocument.objects.get(agent=heidi).name == "Friends.md"


def test_importagents_exits_zero_on_the_shipped_samples_and_a_second_run_changes_nothing(tmp_path):
    dirs = build_shipped_dirs(tmp_path)
    paths = [str(d.path) for d in dirs]
    call_command("importagents", *paths, stdout=io.StringIO(), stderr=io.StringIO())

    out = io.StringIO()
    call_command("importagents", *paths, stdout=out, stderr=io.StringIO())

    assert "0 created, 0 updated" in out.getvalue() and "0 errors, 1 warning" in out.getvalue()
    assert Agent.objects.count() == 3


def test_two_enabled_personas_on_one_phone_are_warned_about_by_name(tmp_path):
    dirs = build_shipped_dirs(tmp_path)
    for name in ("Heidi", "Martha"):
        path = dirs[0].path / "agents" / f"{name}.md"
        path.write_text(path.read_text().replace("# Disabled\n", ""))

    report = config_import(dirs=dirs)

    [warning] = report.warnings
    assert "samples/agents/Heidi.md (enabled), samples/agents/Martha.md (enabled)" in warning
    assert warning.endswith(
        "on Telegram the gateway starts only one of Heidi, Martha (the one already running, else the first "
        "imported); "
        "disable the others or give each its own phone"
    )
