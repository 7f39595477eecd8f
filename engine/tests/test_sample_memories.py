"""The shipped samples as a newcomer uses them: Orla's curated memories are about the sandbox user a
newcomer talks as ("You", the default of `manage.py sandbox say` and of the sandbox chat), and the
README says what a fresh install gives her."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from agents.models import Agent
from engine.tests.harness import Harness, tasks
from media_catalog.models import LibraryItem
from sandbox.services.chats import sandbox_person, sandbox_say

pytestmark = pytest.mark.django_db

MEMORY_DIR = Path(django_settings.BASE_DIR) / "samples" / "agents" / "Orla" / "memory"


def test_the_sample_memories_reach_the_prompt_of_the_default_sandbox_users_dm(clock, fake_llm, settings):
    settings.CINDY_AGENT_CONFIG_PATH = "samples:configdir"
    call_command("importagents", stdout=io.StringIO(), stderr=io.StringIO())
    orla = Agent.objects.get(name="Orla")
    Agent.objects.exclude(pk=orla.pk).update(disabled=True)
    harness = Harness(clock)
    harness.start()

    fake_llm.reply_with(tasks({"kind": "send", "text": "Hello again!"}))
    sandbox_say(agent=orla, text="hi, it's me")  # as "You", as the README's walk-through does
    harness.settle()

    (path,) = MEMORY_DIR.glob("*.json")
    assert path.stem == str(sandbox_person(name="You").user_id)
    prompt = json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    contents = [entry["content"] for entry in json.loads(path.read_text())]
    assert contents and all(content in prompt for content in contents)


def test_the_readme_says_that_orlas_photo_library_starts_empty_and_how_to_fill_it(settings):
    settings.CINDY_AGENT_CONFIG_PATH = "samples:configdir"
    call_command("importagents", stdout=io.StringIO(), stderr=io.StringIO())
    orla = Agent.objects.get(name="Orla")
    assert not LibraryItem.objects.filter(agent=orla).exists()  # a fresh install has no photos for her

    readme = (Path(django_settings.BASE_DIR) / "README.md").read_text()
    (samples,) = [p for p in readme.split("\n\n") if p.startswith("**To add a persona**")]
    samples = " ".join(samples.split())
    assert "photo collection" not in samples
    assert "A fresh install leaves Orla's library empty" in samples
    assert "upload pictures for her in the admin under **Library items**" in samples
