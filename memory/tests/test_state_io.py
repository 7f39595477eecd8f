"""Stored kinds in the original's state files: export, import by id, and clear errors."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from engine.tests.cast import make_agent
from memory.models import Intention, Memory, Note, Plan, Summary
from memory.services.state_io import StateFileError, state_export, state_import

pytestmark = pytest.mark.django_db


def test_state_files_round_trip_in_the_original_layout(tmp_path, clock):
    agent = make_agent(config_name="Wendy")
    Summary.objects.create(
        agent=agent,
        channel_id=-100,
        entry_id="summary-a",
        content="They met.",
        first_message_id=1,
        last_message_id=50,
        first_message_date=clock.now().date(),
        last_message_date=clock.now().date(),
        created=clock.now(),
    )
    Note.objects.create(
        agent=agent, channel_id=-100, entry_id="note-a", content="Likes rye", created=clock.now()
    )
    Plan.objects.create(agent=agent, channel_id=7, plan_id="plan-a", content="Bake", created=clock.now())
    Intention.objects.create(agent=agent, entry_id="intent-a", content="Open a bakery", created=clock.now())
    Memory.objects.create(
        agent=agent, kind="episodic", entry_id="memory-a", content="Oven broke", created=clock.now()
    )

    assert state_export(agent_id=agent.pk, agent_dir=tmp_path / "Wendy") == 3
    channel = json.loads((tmp_path / "Wendy" / "memory" / "-100.json").read_text())
    assert channel["summary"][0] == {
        "id": "summary-a",
        "content": "They met.",
        "min_message_id": 1,
        "max_message_id": 50,
        "first_message_date": clock.now().date().isoformat(),
        "last_message_date": clock.now().date().isoformat(),
    }
    assert channel["note"][0]["id"] == "note-a"
    top = json.loads((tmp_path / "Wendy" / "memory.json").read_text())
    assert [e["id"] for e in top["memory"]] == ["memory-a"] and [e["id"] for e in top["intention"]] == [
        "intent-a"
    ]

    channel["summary"][0]["content"] = "They met at the market."
    (tmp_path / "Wendy" / "memory" / "-100.json").write_text(json.dumps(channel))
    for model in (Note, Plan, Intention, Memory):
        model.objects.all().delete()
    counts = state_import(agent_id=agent.pk, agent_dir=tmp_path / "Wendy")
    assert counts == {"summarize": 1, "note": 1, "plan": 1, "intend": 1, "remember": 1}
    summary = Summary.objects.get()
    assert (summary.entry_id, summary.content, summary.last_message_id) == (
        "summary-a",
        "They met at the market.",
        50,
    )
    assert Plan.objects.get().channel_id == 7 and Note.objects.get().channel_id == -100
    assert Intention.objects.get().kind == "intend" and Memory.objects.get().kind == "episodic"
    state_import(agent_id=agent.pk, agent_dir=tmp_path / "Wendy")
    assert Summary.objects.count() == 1 and Note.objects.count() == 1


def test_a_bad_state_file_is_named_with_the_fix(tmp_path):
    agent = make_agent()
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "5.json").write_text('{"note": [{"id": "n"}]}')
    with pytest.raises(StateFileError, match=r'5.json: "note" entry 1 has no "content"'):
        state_import(agent_id=agent.pk, agent_dir=tmp_path)


def test_importagents_reads_a_state_directory(tmp_path):
    agent = make_agent()
    (tmp_path / "Wendy" / "memory").mkdir(parents=True)
    (tmp_path / "Wendy" / "memory" / "5.json").write_text(
        '{"summary": [{"id": "s1", "content": "Hi", "max_message_id": 9}]}'
    )
    (tmp_path / "config").mkdir()
    call_command("importagents", str(tmp_path / "config"), "--state", str(tmp_path))
    assert Summary.objects.get(agent=agent).last_message_id == 9
    with pytest.raises(CommandError, match="not a directory"):
        call_command("importagents", str(tmp_path / "config"), "--state", str(tmp_path / "nope"))
