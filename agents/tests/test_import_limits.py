"""What an import refuses to read: symbolic links, files outside the config directory, files above
their kind's cap. Each refusal names the file and says why; nothing is read whole to find out."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from agents.models import Agent, AgentDocument, RolePrompt
from agents.tests.configdirs import WEBP_BYTES, media_json, write
from cwimport.configdir.import_report import Outcome
from cwimport.configdir.importing import config_import, configured_dirs
from media_catalog.models import MediaDescription

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]

PERSONA = "# Agent Name\nEve\n\n# Agent Phone\n+15550001\n\n# Agent Instructions\nBe kind.\n"


@pytest.fixture
def config(tmp_path):
    root = tmp_path / "c"
    write(root / "agents/Eve.md", PERSONA)
    return root


@pytest.fixture
def secret(tmp_path):
    return write(tmp_path / "outside" / "shadow", "root:$6$secret:19000:0:99999:7:::\n")


def run(root):
    return config_import(dirs=configured_dirs([str(root)]))


def test_a_document_linked_to_a_file_outside_is_refused_by_name(config, secret):
    (config / "agents/Eve/docs").mkdir(parents=True)
    os.symlink(secret, config / "agents/Eve/docs/shadow.md")

    report = run(config)

    entry = report.by_path("agents/Eve/docs/shadow.md")
    assert entry.outcome == Outcome.ERROR
    assert entry.detail.startswith(f"{config}/agents/Eve/docs/shadow.md: a symbolic link (to {secret})")
    assert "copy the file in instead" in entry.detail
    assert not AgentDocument.objects.exists()
    assert Agent.objects.filter(name="Eve").exists()  # the rest of the import goes on


def test_a_linked_folder_is_refused_for_every_file_in_it(config, secret, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "notes.md", "private notes")
    (config / "agents/Eve").mkdir(parents=True)
    os.symlink(elsewhere, config / "agents/Eve/docs")

    report = run(config)

    entry = report.by_path("agents/Eve/docs/notes.md")
    assert entry.outcome == Outcome.ERROR
    assert f"lies under a symbolic link and resolves to {elsewhere / 'notes.md'}" in entry.detail
    assert not AgentDocument.objects.exists()


def test_linked_personas_prompts_memories_and_media_are_refused(config, secret):
    for relative in (
        "agents/Mallory.md",
        "prompts/Leak.md",
        "agents/Eve/prompts/Leak.md",
        "agents/Eve/memory/42.json",
    ):
        (config / relative).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(secret, config / relative)
    write(config / "media/AgAD1.json", media_json("AgAD1", "a wave"))
    os.symlink(secret, config / "media/AgAD1.webp")

    report = run(config)

    for relative in (
        "agents/Mallory.md",
        "c/prompts/Leak.md",
        "agents/Eve/prompts/Leak.md",
        "agents/Eve/memory/42.json",
    ):
        entry = report.by_path(relative)
        assert entry.outcome == Outcome.ERROR, relative
        assert "a symbolic link" in entry.detail
    media = report.by_path("media/AgAD1.json")
    assert media.outcome == Outcome.ERROR
    assert f"{config}/media/AgAD1.webp: a symbolic link (to {secret})" in media.detail
    assert not RolePrompt.objects.exists()
    assert not MediaDescription.objects.exists()
    assert list(Agent.objects.values_list("name", flat=True)) == ["Eve"]


def test_a_200_mb_document_is_refused_without_being_read(config):
    (config / "agents/Eve/docs").mkdir(parents=True)
    with (config / "agents/Eve/docs/huge.md").open("wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # sparse: no disk used

    tracemalloc.start()
    try:
        report = run(config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    entry = report.by_path("agents/Eve/docs/huge.md")
    assert entry.outcome == Outcome.ERROR
    assert entry.detail == (
        f"{config}/agents/Eve/docs/huge.md: 209,715,200 bytes, more than the 4,194,304 bytes a document may "
        "have (CINDY_IMPORT_MAX_DOCUMENT_BYTES): make the file smaller, or raise the cap"
    )
    assert peak < 20 * 1024 * 1024
    assert not AgentDocument.objects.exists()


@pytest.mark.parametrize(
    ("relative", "setting", "what"),
    [
        ("agents/Big.md", "CINDY_IMPORT_MAX_PERSONA_BYTES", "a persona file"),
        ("prompts/Big.md", "CINDY_IMPORT_MAX_PROMPT_BYTES", "a role prompt"),
        ("agents/Eve/prompts/Big.md", "CINDY_IMPORT_MAX_PROMPT_BYTES", "a role prompt"),
        ("agents/Eve/memory/42.json", "CINDY_IMPORT_MAX_MEMORY_BYTES", "a memory file"),
        ("media/AgAD2.json", "CINDY_IMPORT_MAX_MEDIA_JSON_BYTES", "a media description"),
    ],
)
def test_every_kind_of_file_has_a_cap_named_in_the_error(config, settings, relative, setting, what):
    setattr(settings, setting, 1000)
    write(config / relative, "x" * 1001)

    entry = run(config).by_path(relative)

    assert entry.outcome == Outcome.ERROR
    assert entry.detail == (
        f"{config}/{relative}: 1,001 bytes, more than the 1,000 bytes {what} may have ({setting}): "
        "make the file smaller, or raise the cap"
    )


def test_a_media_file_above_its_cap_is_refused(config, settings):
    settings.CINDY_IMPORT_MAX_MEDIA_FILE_BYTES = 10
    write(config / "media/AgAD3.json", media_json("AgAD3", "a wave"))
    write(config / "media/AgAD3.webp", WEBP_BYTES)

    entry = run(config).by_path("media/AgAD3.json")

    assert entry.outcome == Outcome.ERROR
    assert "AgAD3.webp: 34 bytes, more than the 10 bytes a media file may have" in entry.detail
    assert not MediaDescription.objects.exists()


def test_a_50_mb_role_prompt_is_refused(config):
    (config / "prompts").mkdir()
    with (config / "prompts/Huge.md").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)

    entry = run(config).by_path("prompts/Huge.md")

    assert entry.outcome == Outcome.ERROR
    assert (
        "more than the 1,048,576 bytes a role prompt may have (CINDY_IMPORT_MAX_PROMPT_BYTES)" in entry.detail
    )
    assert not RolePrompt.objects.exists()


def test_files_within_their_caps_still_import(config):
    write(config / "prompts/Kind.md", "Be kind.")
    write(config / "agents/Eve/docs/menu.md", "tea, cake")

    report = run(config)

    assert report.errors == []
    assert AgentDocument.objects.get().content == "tea, cake"
