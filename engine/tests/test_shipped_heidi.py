"""The original's sample Heidi in the sandbox with her shipped role prompts: her schedule, her media
library and her documents, through retrieve tasks as the original's prompts ask for them."""

from __future__ import annotations

import json

import pytest

from agents.models import Agent
from agents.tests.shipped_samples import build_shipped_dirs
from conversations.models import TaskNode
from cwimport.configdir.importing import config_import
from engine.tests.harness import Harness, tasks
from media_catalog.models import LibraryItem, MediaDescription
from memory.models import ScheduleEntry
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def heidi(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "storage"
    settings.TELEGRAM_API_ID = settings.TELEGRAM_API_HASH = ""
    report = config_import(dirs=build_shipped_dirs(tmp_path))
    assert report.errors == []
    Agent.objects.filter(name="Heidi").update(
        disabled=False, llm="gemini", start_typing_delay=1, typing_speed=100
    )
    return Agent.objects.get(name="Heidi")


@pytest.fixture
def harness(heidi, clock, fake_llm):
    h = Harness(clock)
    h.start()
    return h


def _schema_kinds(request) -> list[str]:
    return request.json["generationConfig"]["responseSchema"]["items"]["properties"]["kind"]["enum"]


def _texts(request) -> list[str]:
    return [part.get("text", "") for turn in request.json["contents"] for part in turn["parts"]]


def test_reading_file_schedule_json_lets_heidi_change_her_schedule(heidi, harness, fake_llm, clock):
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:schedule.json"]}))
    fake_llm.reply_with(
        tasks(
            {
                "kind": "schedule",
                "id": "act-piano",
                "start_time": "2030-01-16T16:00:00-08:00",
                "end_time": "2030-01-16T17:00:00-08:00",
                "activity_name": "Piano",
                "responsiveness": 30,
                "description": "Scales",
            },
            {"kind": "send", "text": "Piano at four."},
        )  # fmt: skip
    )
    sandbox_say(agent=heidi, text="busy tomorrow?")
    harness.settle()

    first, second = fake_llm.requests
    assert "schedule" not in _schema_kinds(first)
    assert "schedule" in _schema_kinds(second)  # Task-Schedule came with the file, as in the original
    system = "".join(part["text"] for part in second.json["systemInstruction"]["parts"])
    assert "Read `file:schedule.json` before changing your schedule" in system
    entry = ScheduleEntry.objects.get(agent=heidi)
    assert (entry.entry_id, entry.activity, entry.responsiveness) == ("act-piano", "Piano", 30)
    assert sandbox_transcript(agent=heidi)[-1] == "Heidi: Piano at four."
    received = TaskNode.objects.get(kind="received")
    assert not [e for e in received.result["errors"] if "not taught" in e]


def test_without_the_schedule_in_context_a_schedule_task_is_not_taught(heidi, harness, fake_llm):
    fake_llm.reply_with(
        tasks(
            {
                "kind": "schedule",
                "start_time": "2030-01-16T16:00:00-08:00",
                "end_time": "2030-01-16T17:00:00-08:00",
                "activity_name": "Piano",
                "responsiveness": 30,
                "description": "",
            }
        )  # fmt: skip
    )
    sandbox_say(agent=heidi, text="busy tomorrow?")
    harness.settle()

    assert not ScheduleEntry.objects.exists()
    received = TaskNode.objects.get(kind="received")
    assert [e for e in received.result["errors"] if '"schedule" is not taught' in e]


def test_file_media_json_lists_her_library_in_the_originals_format(heidi, harness, fake_llm):
    LibraryItem.objects.create(agent=heidi, unique_id="AgADgoat", kind="photo", description="Peter's goats")
    LibraryItem.objects.create(agent=heidi, unique_id="AgADhut", kind="photo")
    LibraryItem.objects.create(agent=heidi, unique_id="AgADsong", kind="audio")
    MediaDescription.objects.create(unique_id="AgADhut", description="A hut in the snow", status="ok")
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:media.json"]}))
    fake_llm.reply_with(tasks({"kind": "send_media", "unique_id": "AgADgoat"}))
    sandbox_say(agent=heidi, text="show me the goats")
    harness.settle()

    own = next(t for t in _texts(fake_llm.requests[1]) if t.startswith("# Your document file:media.json"))
    assert json.loads(own.split("\n\n", 2)[2]) == [
        {"media_id": "AgADgoat", "media_type": "photo", "description": "Peter's goats"},
        {"media_id": "AgADhut", "media_type": "photo", "description": "A hut in the snow"},
        {"media_id": "AgADsong", "media_type": "audio"},
    ]


def test_her_document_is_labelled_as_her_own_not_as_untrusted_web_text(heidi, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:Friends.md"]}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Peter has goats."}))
    sandbox_say(agent=heidi, text="who is Peter?")
    harness.settle()

    texts = _texts(fake_llm.requests[1])
    [own] = [t for t in texts if "Peter looks after the goats." in t]
    assert own.startswith("# Your document file:Friends.md\n\nOne of your own documents")
    assert not [t for t in texts if "untrusted" in t]
