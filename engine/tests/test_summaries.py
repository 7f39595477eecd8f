"""Summaries in the sandbox with the fake LLM: the summarization turn, update/delete by id,
consolidation, and the history of the next prompt starting after the last summary."""

from __future__ import annotations

import json

import pytest

from conversations.models import Conversation, TaskGraph, TaskNode
from conversations.services.summaries import KEEP_RECENT
from engine.tests.harness import tasks
from llm.conversation import HISTORY_OVERLAP
from llm.models import LLMCall
from memory.models import Summary
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


def _system(request) -> str:
    return "".join(part["text"] for part in request.json["systemInstruction"]["parts"])


def _history_texts(request) -> list[str]:
    """The texts of the history turns (every content but the final user turn)."""
    return ["\n".join(p.get("text", "") for p in c["parts"]) for c in request.json["contents"][:-1]]


def _say_many(agent, count: int, *, start: int = 1) -> None:
    for number in range(start, start + count):
        sandbox_say(agent=agent, text=f"line {number}")


def _summaries() -> list[Summary]:
    return list(Summary.objects.order_by("first_message_id", "id"))


def test_75_messages_start_one_summarization_turn_and_the_next_history_starts_after_it(
    agent, harness, fake_llm
):
    _say_many(agent, 75)
    fake_llm.reply_with(tasks({"kind": "send", "text": "so many lines"}))
    fake_llm.reply_with(
        tasks(
            {"kind": "think", "text": "lines about nothing"},
            {"kind": "summarize", "content": "They sent numbered lines."},
            {"kind": "send", "text": "this must never reach the chat"},
        )
    )
    harness.settle()

    (summary,) = _summaries()
    assert summary.content == "They sent numbered lines."
    graph = TaskGraph.objects.get(trigger=TaskGraph.Trigger.SUMMARIZE)
    assert graph.status == TaskGraph.Status.DONE
    # The 75 person's lines and the agent's reply make 76 messages: all but the newest 20 are covered.
    assert (summary.first_message_id, summary.last_message_id) == (1, 76 - KEEP_RECENT)
    assert summary.first_message_date is not None and summary.last_message_date is not None
    summarize_request = fake_llm.requests[1]
    assert "# Instructions For This Turn" in summarize_request.json["contents"][-1]["parts"][0]["text"]
    assert len(_history_texts(summarize_request)) == 76 - KEEP_RECENT
    schema = summarize_request.json["generationConfig"]["responseSchema"]["items"]["properties"]
    assert schema["kind"]["enum"] == ["think", "summarize"]
    purposes = list(LLMCall.objects.order_by("id").values_list("purpose", flat=True))
    assert purposes == [LLMCall.Purpose.PLAN, LLMCall.Purpose.SUMMARIZE]
    assert "never reach" not in " ".join(sandbox_transcript(agent=agent))
    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.SUMMARIZE).count() == 1

    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, text="and one more")
    harness.settle()
    request = fake_llm.requests[-1]
    assert "They sent numbered lines." in _system(request).split("# Conversation Summary", 1)[1]
    history = _history_texts(request)
    first_shown = summary.last_message_id - HISTORY_OVERLAP + 1
    assert history[0].startswith(f"[message_id {first_shown} ")
    assert len(history) == HISTORY_OVERLAP + KEEP_RECENT + 1
    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.SUMMARIZE).count() == 1


def test_a_summarization_turn_without_a_summary_is_not_repeated(agent, harness, fake_llm):
    _say_many(agent, 72)
    fake_llm.reply_with(tasks())
    fake_llm.reply_with(tasks())
    harness.settle()
    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, text="still here")
    harness.settle()

    assert Summary.objects.count() == 0
    assert TaskGraph.objects.filter(trigger=TaskGraph.Trigger.SUMMARIZE).count() == 1
    assert len(fake_llm.requests) == 3


def _turn(agent, harness, fake_llm, *items: dict) -> None:
    fake_llm.reply_with(tasks(*items))
    sandbox_say(agent=agent, text="hello")
    harness.settle()


def test_summaries_update_keeping_missing_fields_and_delete_by_id(agent, harness, fake_llm):
    _turn(
        agent,
        harness,
        fake_llm,
        {
            "kind": "summarize",
            "id": "summary-first",
            "content": "We met.",
            "min_message_id": 1,
            "max_message_id": 1,
            "first_message_date": "2025-03-01",
            "last_message_date": "2025-03-01",
        },
    )
    _turn(agent, harness, fake_llm, {"kind": "summarize", "id": "summary-first", "content": "We met twice."})
    summary = Summary.objects.get()
    assert (summary.content, summary.first_message_id, summary.last_message_id) == ("We met twice.", 1, 1)
    assert summary.first_message_date.isoformat() == "2025-03-01"

    fake_llm.reply_with(tasks({"kind": "summarize", "id": "summary-first", "content": ""}))
    sandbox_say(agent=agent, text="forget it")
    harness.settle()
    entries = json.loads(
        _system(fake_llm.requests[-1]).split("# Conversation Summary")[1].split("```json")[1].split("```")[0]
    )
    assert entries == [
        {
            "id": "summary-first",
            "content": "We met twice.",
            "min_message_id": 1,
            "max_message_id": 1,
            "first_message_date": "2025-03-01",
            "last_message_date": "2025-03-01",
        }
    ]
    assert not Summary.objects.exists()
    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, text="again")
    harness.settle()
    assert "# Conversation Summary" not in _system(fake_llm.requests[-1])


def _summary(agent, conversation: Conversation, index: int, clock) -> Summary:
    return Summary.objects.create(
        agent=agent,
        channel_id=conversation.peer_id,
        entry_id=f"summary-{index}",
        content=f"Part {index}.",
        first_message_id=index * 10,
        last_message_id=index * 10 + 9,
        first_message_date=clock.now().date(),
        last_message_date=clock.now().date(),
        created=clock.now(),
    )


def test_seven_summaries_are_consolidated_into_one_over_the_oldest_five(agent, harness, fake_llm, clock):
    _turn(agent, harness, fake_llm)
    conversation = Conversation.objects.get(agent=agent)
    for index in range(7):
        _summary(agent, conversation, index, clock)
    fake_llm.reply_with(tasks({"kind": "send", "text": "ok"}))
    fake_llm.reply_with("Parts zero to four, merged.")
    sandbox_say(agent=agent, text="hello again")
    harness.settle()

    consolidate = fake_llm.requests[-1]
    assert "Part 0." in json.dumps(consolidate.json) and "Part 5." not in json.dumps(consolidate.json)
    assert "responseSchema" not in consolidate.json.get("generationConfig", {})
    merged, *rest = _summaries()
    assert (merged.content, merged.first_message_id, merged.last_message_id) == (
        "Parts zero to four, merged.",
        0,
        49,
    )
    assert [s.entry_id for s in rest] == ["summary-5", "summary-6"]
    assert LLMCall.objects.filter(purpose=LLMCall.Purpose.SUMMARIZE).count() == 1
    node = TaskNode.objects.filter(graph__trigger=TaskGraph.Trigger.SUMMARIZE, kind="received").get()
    assert node.result["notes"] == [f"consolidated 5 summaries into {merged.entry_id}"]

    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, text="and now?")
    harness.settle()
    system = _system(fake_llm.requests[-1])
    assert system.index("Parts zero to four, merged.") < system.index("Part 5.") < system.index("Part 6.")


def test_a_failed_consolidation_does_not_hold_summarization_back(agent, harness, fake_llm, clock):
    _turn(agent, harness, fake_llm)
    conversation = Conversation.objects.get(agent=agent)
    for index in range(7):
        summary = _summary(agent, conversation, index, clock)
        Summary.objects.filter(pk=summary.pk).update(first_message_id=0, last_message_id=index)
    _say_many(agent, 75)
    fake_llm.reply_with(tasks())
    fake_llm.reply_with(None)  # the consolidation answers nothing: the summaries are kept
    fake_llm.reply_with(tasks({"kind": "summarize", "content": "Numbered lines."}))
    fake_llm.reply_with("Parts merged.")  # the summary count changed: consolidation is tried again
    harness.settle()

    graphs = list(TaskGraph.objects.filter(trigger=TaskGraph.Trigger.SUMMARIZE).order_by("id"))
    assert [g.context["summarize"]["need"] for g in graphs] == ["consolidate", "summarize", "consolidate"]
    consolidation = TaskNode.objects.get(graph=graphs[0], kind="received")
    assert "the summaries are kept" in consolidation.result["errors"][0]
    contents = [s.content for s in _summaries()]
    assert len(contents) == 8 - 5 + 1 and "Numbered lines." in contents and "Parts merged." in contents
    assert len(fake_llm.requests) == 5
