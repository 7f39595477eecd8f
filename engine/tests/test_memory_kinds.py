"""Notes, intentions, the first-message flags, and a crash during a summarization turn."""

from __future__ import annotations

import json

import pytest

from conversations.models import Conversation, NodeStatus, TaskNode
from engine.tasks import received_apply, run_received
from engine.tests.harness import stored_entries_text, tasks
from llm.planning import plan_turn
from llm.summarization import summary_tasks
from llm.tasks import Task
from memory.models import Intention, Note, Plan, Summary
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def _section(system: str, title: str) -> list[dict]:
    body = system.split(f"# {title}\n\n", 1)[1]
    return json.loads(body.split("```json\n", 1)[1].split("\n```", 1)[0])


def _turn(agent, harness, fake_llm, *items: dict, text: str = "hello") -> None:
    fake_llm.reply_with(tasks(*items))
    sandbox_say(agent=agent, text=text)
    harness.settle()


def test_notes_are_created_updated_and_deleted_by_id_and_shown_beside_the_memories(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "note", "id": "note-cat", "content": "Has a cat."},
        {"kind": "remember", "content": "Likes tea."},
    )
    _turn(agent, harness, fake_llm, {"kind": "note", "id": "note-cat", "content": "Has two cats."})
    note = Note.objects.get()
    assert (note.entry_id, note.content, note.channel_id) == ("note-cat", "Has two cats.", note.channel_id)
    _turn(agent, harness, fake_llm)
    system = stored_entries_text(fake_llm.requests[-1])
    assert [e["content"] for e in _section(system, "Conversation Notes")] == ["Has two cats."]
    assert system.index("# Global Memories") < system.index("# Conversation Notes")
    _turn(agent, harness, fake_llm, {"kind": "note", "id": "note-cat", "content": ""})
    assert not Note.objects.exists()
    _turn(agent, harness, fake_llm)
    assert "# Conversation Notes" not in stored_entries_text(fake_llm.requests[-1])


def test_intentions_are_created_updated_and_deleted_by_id_after_the_channel_plan(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "plan", "content": "Talk about baking."},
        {"kind": "intend", "id": "intent-bakery", "content": "Open a bakery."},
    )
    _turn(
        agent, harness, fake_llm, {"kind": "intend", "id": "intent-bakery", "content": "Open a small bakery."}
    )
    intention = Intention.objects.get()
    assert (intention.kind, intention.content, intention.consumed) == ("intend", "Open a small bakery.", None)
    system = stored_entries_text(fake_llm.requests[-1])
    assert [e["id"] for e in _section(system, "Intentions")] == ["intent-bakery"]
    assert system.index("# Channel Plan") < system.index("# Intentions")
    _turn(agent, harness, fake_llm, {"kind": "intend", "id": "intent-bakery", "content": ""})
    assert not Intention.objects.exists()
    _turn(agent, harness, fake_llm)
    assert "# Intentions" not in stored_entries_text(fake_llm.requests[-1])


def _seed_history(agent, harness, fake_llm, clock) -> Conversation:
    """The agent wrote first (outreach); the partner has not answered yet; a summary and a plan exist."""
    from sandbox.services.chats import sandbox_chat_for, sandbox_post, sandbox_user_for_agent

    chat = sandbox_chat_for(agent=agent)
    sandbox_post(chat=chat, sender=sandbox_user_for_agent(agent=agent), text="Hello, are you there?")
    harness.settle()
    conversation = Conversation.objects.get(agent=agent)
    Summary.objects.create(
        agent=agent,
        channel_id=conversation.peer_id,
        content="Old talk.",
        last_message_id=0,
        created=clock.now(),
    )
    Plan.objects.create(
        agent=agent, channel_id=conversation.peer_id, content="Old plan.", created=clock.now()
    )
    return conversation


def test_reset_context_on_first_message_hides_earlier_history_and_clears_summaries_and_plans(
    agent, harness, fake_llm, clock
):
    agent.reset_context_on_first_message = True
    agent.save()
    _seed_history(agent, harness, fake_llm, clock)
    _turn(agent, harness, fake_llm, text="hi, who are you?")

    assert not Summary.objects.exists() and not Plan.objects.exists()
    request = fake_llm.requests[-1]
    history = ["".join(p.get("text", "") for p in c["parts"]) for c in request.json["contents"][:-1]]
    assert len(history) == 1 and "hi, who are you?" in history[0]
    assert "Hello, are you there?" not in json.dumps(request.json)
    _turn(agent, harness, fake_llm, text="second")
    history = [c for c in fake_llm.requests[-1].json["contents"][:-1]]
    assert "hi, who are you?" in json.dumps(history) and "Hello, are you there?" not in json.dumps(history)


def test_clear_summaries_on_first_message_deletes_only_the_summaries(agent, harness, fake_llm, clock):
    agent.clear_summaries_on_first_message = True
    agent.save()
    _seed_history(agent, harness, fake_llm, clock)
    _turn(agent, harness, fake_llm, text="hi")

    assert not Summary.objects.exists() and Plan.objects.count() == 1
    request = fake_llm.requests[-1]
    assert "Hello, are you there?" in json.dumps(request.json)
    Summary.objects.create(
        agent=agent, channel_id=Conversation.objects.get().peer_id, content="Kept.", created=clock.now()
    )
    _turn(agent, harness, fake_llm, text="later")
    assert Summary.objects.get().content == "Kept."


def test_a_crash_during_a_summarization_turn_loses_nothing_and_writes_one_summary(
    agent, harness, fake_llm, clock, settings
):
    for number in range(75):
        sandbox_say(agent=agent, text=f"line {number}")
    fake_llm.reply_with(tasks())
    node_id = owner = None
    for _ in range(10):  # run the reply turn, up to the claim of the summarization turn's node
        harness.ingest()
        harness.tick()
        queued = [
            (n, o) for n, o in harness.queued if TaskNode.objects.get(pk=n).graph.trigger == "summarize"
        ]
        if queued:
            ((node_id, owner),) = queued
            harness.queued.clear()
            break
        harness.work()
        if harness.next_due() is not None:
            clock.set(harness.next_due())
    assert node_id is not None

    fake_llm.reply_with(tasks({"kind": "summarize", "content": "First try."}))
    crashed = plan_turn(node_id=node_id)  # the worker dies after the LLM answered, before storing
    assert not Summary.objects.exists()
    assert TaskNode.objects.get(pk=node_id).status == NodeStatus.RUNNING

    clock.advance(settings.CINDY_NODE_LEASE_SECONDS + 1)
    fake_llm.reply_with(tasks({"kind": "summarize", "content": "Second try."}))
    harness.settle()
    assert [s.content for s in Summary.objects.all()] == ["Second try."]
    assert TaskNode.objects.get(pk=node_id).status == NodeStatus.DONE

    assert "taken over" in received_apply(node_id=node_id, owner=owner, result=crashed)
    assert "no longer running" in run_received(node_id, owner)
    assert [s.content for s in Summary.objects.all()] == ["Second try."]


def test_a_summary_without_id_over_an_existing_range_updates_it(agent, clock):
    existing = Summary(entry_id="summary-a", first_message_id=1, last_message_id=50)
    messages = [type("M", (), {"message_id": n, "date": clock.now()})() for n in (1, 50)]
    (task,) = summary_tasks(
        [Task(kind="summarize", params={"content": "Again."})],
        existing=[existing],
        messages=messages,
        notes=[],
    )
    assert task.id == "summary-a" and task.params["max_message_id"] == 50


def test_a_new_memory_keeps_the_channels_username_as_the_original_writes_it(agent, harness, fake_llm):
    from memory.models import Memory

    _turn(agent, harness, fake_llm, {"kind": "remember", "content": "Likes tea."})

    dm = Conversation.objects.get(agent=agent)
    assert dm.username  # the sandbox person has a username, as most Telegram users do
    memory = Memory.objects.get(agent=agent)
    assert (memory.creation_channel, memory.extra) == (
        dm.title,
        {"creation_channel_username": f"@{dm.username}"},
    )
