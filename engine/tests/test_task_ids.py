"""Task ids, duplicate ids, depends_on edges, and the stored kinds' create / update / delete by id."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import ActivityEvent, Conversation, TaskNode
from engine.tests.harness import stored_entries_text, tasks
from memory.models import Memory, Plan
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


def _turn(agent, harness, fake_llm, *items: dict, text: str = "hello") -> None:
    fake_llm.reply_with(tasks(*items))
    sandbox_say(agent=agent, text=text)
    harness.settle()


def _nodes() -> list[TaskNode]:
    return list(TaskNode.objects.exclude(kind="received").order_by("sequence"))


def test_two_tasks_with_the_same_id_keep_only_the_last(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "send", "id": "greet", "text": "Hello"},
        {"kind": "send", "id": "other", "text": "How are you?"},
        {"kind": "send", "id": "greet", "text": "Hi there!"},
    )
    assert sandbox_transcript(agent=agent)[1:] == ["Wendy: How are you?", "Wendy: Hi there!"]


def test_a_think_with_the_id_of_a_send_cancels_it(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "send", "id": "s1", "text": "Something rude"},
        {"kind": "think", "id": "s1", "text": "no, better not"},
        {"kind": "send", "text": "Something kind"},
    )
    assert sandbox_transcript(agent=agent)[1:] == ["Wendy: Something kind"]


def test_depends_on_becomes_graph_edges_and_tasks_without_it_chain(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "send", "id": "a", "text": "one"},
        {"kind": "send", "id": "b", "text": "two"},
        {"kind": "react", "id": "r", "emoji": "👍", "message_id": 1, "depends_on": []},
        {"kind": "send", "id": "c", "text": "three", "depends_on": ["a"]},
        {"kind": "send", "id": "d", "text": "four"},
    )
    received = TaskNode.objects.get(kind="received")
    a, b, react, c, d = _nodes()
    assert list(a.depends_on.all()) == [received]
    assert list(b.depends_on.all()) == [a]
    assert list(react.depends_on.all()) == [received]
    assert list(c.depends_on.all()) == [a]
    assert list(d.depends_on.all()) == [c]
    assert all(node.status == "done" for node in (a, b, react, c, d))


def test_depends_on_several_ids_and_on_a_later_task(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "send", "id": "late", "text": "after both", "depends_on": ["x", "y"]},
        {"kind": "send", "id": "x", "text": "x", "depends_on": []},
        {"kind": "send", "id": "y", "text": "y", "depends_on": []},
    )
    late, x, y = _nodes()
    assert set(late.depends_on.all()) == {x, y}
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: after both"


def test_a_dependency_cycle_falls_back_to_the_order_given(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "send", "id": "p", "text": "p", "depends_on": ["q"]},
        {"kind": "send", "id": "q", "text": "q", "depends_on": ["p"]},
    )
    p, q = _nodes()
    assert list(q.depends_on.all()) == [p]
    assert sandbox_transcript(agent=agent)[1:] == ["Wendy: p", "Wendy: q"]


def test_depends_on_an_unknown_or_stored_task_waits_only_for_planning(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "remember", "id": "m1", "content": "Likes tea"},
        {"kind": "send", "text": "Noted", "depends_on": ["m1", "nope"]},
    )
    (send,) = _nodes()
    assert list(send.depends_on.all()) == [TaskNode.objects.get(kind="received")]
    assert Memory.objects.get().entry_id == "m1"


def test_remember_creates_updates_and_deletes_by_id(agent, harness, fake_llm):
    _turn(agent, harness, fake_llm, {"kind": "remember", "id": "pet", "content": "Has a cat"})
    memory = Memory.objects.get()
    assert (memory.entry_id, memory.content, memory.kind) == ("pet", "Has a cat", "episodic")
    conversation = Conversation.objects.get()
    assert memory.creation_channel_id == conversation.peer_id
    first_created = memory.created

    _turn(agent, harness, fake_llm, {"kind": "remember", "id": "pet", "content": "Has a cat called Tom"})
    memory = Memory.objects.get()
    assert (memory.entry_id, memory.content, memory.created) == ("pet", "Has a cat called Tom", first_created)

    _turn(agent, harness, fake_llm, {"kind": "remember", "content": "Works nights"})
    assert Memory.objects.count() == 2
    assert Memory.objects.exclude(entry_id="pet").get().entry_id.startswith("memory-")

    _turn(agent, harness, fake_llm, {"kind": "remember", "id": "pet", "content": ""})
    assert list(Memory.objects.values_list("content", flat=True)) == ["Works nights"]
    done = TaskNode.objects.filter(kind="received").order_by("id").last()
    assert done.result["stored"] == ["remember pet deleted"]

    _turn(agent, harness, fake_llm, {"kind": "remember", "id": "pet", "content": ""})
    done = TaskNode.objects.filter(kind="received").order_by("id").last()
    assert done.result["stored"] == ["remember pet absent"]
    assert done.result["notes"] == ["remember pet: nothing to delete, no entry has that id"]


def test_remember_honours_created(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "remember", "id": "b", "content": "Birthday in May", "created": "2025-01-15"},
        {"kind": "remember", "id": "c", "content": "Met at the fair", "created": "2025-01-15 14:30:00 PST"},
    )
    by_id = {m.entry_id: m for m in Memory.objects.all()}
    assert by_id["b"].created == dt.datetime(2025, 1, 15, tzinfo=dt.UTC)
    assert by_id["b"].created_raw == "2025-01-15"
    assert by_id["c"].created_raw == "2025-01-15 14:30:00 PST"  # kept as written; dated now


def test_plan_creates_updates_and_deletes_by_id(agent, harness, fake_llm):
    _turn(agent, harness, fake_llm, {"kind": "plan", "id": "bake", "content": "Teach Sam to bake"})
    _turn(agent, harness, fake_llm, {"kind": "plan", "content": "Ask about the exam"})
    assert sorted(Plan.objects.values_list("plan_id", "content")) == [
        ("bake", "Teach Sam to bake"),
        (Plan.objects.exclude(plan_id="bake").get().plan_id, "Ask about the exam"),
    ]
    _turn(
        agent, harness, fake_llm, {"kind": "plan", "id": "bake", "content": "Check how the first loaf went"}
    )
    assert Plan.objects.get(plan_id="bake").content == "Check how the first loaf went"
    _turn(agent, harness, fake_llm, {"kind": "plan", "id": "bake", "content": ""})
    assert list(Plan.objects.values_list("content", flat=True)) == ["Ask about the exam"]


def test_plans_belong_to_their_conversation(agent, harness, fake_llm):
    _turn(agent, harness, fake_llm, {"kind": "plan", "id": "p", "content": "Alice's plan"}, text="hi")
    fake_llm.reply_with(tasks({"kind": "plan", "id": "p", "content": "Bob's plan"}))
    sandbox_say(agent=agent, text="hey", as_name="Bob")
    harness.settle()
    assert sorted(Plan.objects.values_list("content", flat=True)) == ["Alice's plan", "Bob's plan"]


def test_the_prompt_shows_stored_entries_with_their_ids(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "remember", "id": "pet", "content": "Has a cat"},
        {"kind": "plan", "id": "next", "content": "Ask the cat's name"},
    )
    fake_llm.reply_with(tasks({"kind": "send", "text": "ok"}))
    sandbox_say(agent=agent, text="again")
    harness.settle()
    system = stored_entries_text(fake_llm.requests[-1])
    assert '"id": "pet"' in system and "# Global Memories" in system
    assert '"id": "next"' in system and "# Channel Plan" in system


def test_an_empty_send_and_a_negative_wait_are_noted_not_errors(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {"kind": "send", "text": "   "},
        {"kind": "wait", "delay": -5},
        {"kind": "send", "text": "still here"},
    )
    kinds = [n.kind for n in _nodes()]
    assert kinds == ["wait", "send"] and _nodes()[0].params["delay"] == 0
    received = TaskNode.objects.get(kind="received")
    assert received.result["errors"] == []
    assert len(received.result["notes"]) == 2
    notes = ActivityEvent.objects.filter(summary__startswith="task adjusted:").values_list(
        "summary", flat=True
    )
    assert any("without text" in n for n in notes) and any("negative" in n for n in notes)
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: still here"


def test_a_newly_declared_stored_kind_runs_through_the_engine_unchanged(agent, harness, fake_llm):
    from memory import stored_kinds
    from memory.models import Summary
    from memory.stored_kinds import StoredKind, StoredParam

    saved = dict(stored_kinds._REGISTRY)
    stored_kinds.register(
        StoredKind(
            kind="summarize",
            model=Summary,
            id_prefix="summary",
            scope=lambda context: {"agent_id": context.agent_id, "channel_id": context.channel_id},
            params=(StoredParam("min_message_id", "first_message_id", "int"),),
            section_title="Conversation Summary (test)",
            section_entry=lambda row: {"id": row.entry_id, "content": row.content},
        )
    )
    try:
        _turn(
            agent, harness, fake_llm, {"kind": "summarize", "id": "s", "content": "Hi", "min_message_id": 1}
        )
        _turn(agent, harness, fake_llm, {"kind": "summarize", "id": "s", "content": "Hi and bye"})
        summary = Summary.objects.get()
        assert (summary.entry_id, summary.content, summary.first_message_id) == ("s", "Hi and bye", 1)
        system = stored_entries_text(fake_llm.requests[-1])
        assert "# Conversation Summary (test)" in system and '"id": "s"' in system
        schema_kinds = fake_llm.requests[-1].json["generationConfig"]["responseSchema"]["items"]["properties"]
        assert "summarize" in schema_kinds["kind"]["enum"]
    finally:
        stored_kinds._REGISTRY.clear()
        stored_kinds._REGISTRY.update(saved)
