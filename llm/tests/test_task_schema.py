"""SCHEMA_TASKS markers and the reply schema they shape (the original's rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm.task_schema import (
    conversational_kinds,
    kinds_from_prompt,
    schema_kinds,
    task_list_schema,
    taught_kinds,
)
from llm.tasks import known_kinds

ROOT = Path(__file__).resolve().parents[2]
#: The original's Instructions marker: what the Instructions prompt teaches in any case.
CONVERSATIONAL_KINDS = ("send", "react", "sticker", "wait", "block", "unblock", "think")


def test_one_marker_names_one_or_several_kinds():
    assert kinds_from_prompt("<!-- SCHEMA_TASKS: send -->\n\n# Instructions") == {"send"}
    assert kinds_from_prompt("<!-- SCHEMA_TASKS: send, react, sticker -->") == {"send", "react", "sticker"}


def test_markers_add_up_and_ignore_case_and_spaces():
    prompt = "<!-- SCHEMA_TASKS: send, react -->\n# A\n<!-- schema_tasks:  sticker , wait -->\n# B"
    assert kinds_from_prompt(prompt) == {"send", "react", "sticker", "wait"}
    assert kinds_from_prompt("# Instructions\n\nSome text.") == set()


def test_taught_kinds_is_the_union_in_canonical_order_without_unknown_names():
    prompts = [
        ("Task-A", "<!-- SCHEMA_TASKS: wait, send -->"),
        ("Task-B", "<!-- SCHEMA_TASKS: nonexistent_task, remember -->"),
        ("Chatbot", "plain"),
    ]
    assert taught_kinds(prompts) == ("send", "wait", "remember")


def test_a_prompt_without_a_marker_teaches_nothing():
    assert taught_kinds([("Chatbot", "# Chatbot"), ("Task-Memory", "# Remembering")]) == ()


def test_instructions_always_teach_the_conversational_kinds_marker_or_not():
    assert set(conversational_kinds()) == set(CONVERSATIONAL_KINDS)
    assert set(taught_kinds([("Instructions", "# Response format")])) == set(CONVERSATIONAL_KINDS)
    marked = taught_kinds(
        [("Instructions", "<!-- SCHEMA_TASKS: shutdown -->"), ("Task-XSend", "<!-- SCHEMA_TASKS: xsend -->")]
    )
    assert set(marked) == {*CONVERSATIONAL_KINDS, "shutdown", "xsend"}


def test_without_a_limit_the_schema_allows_every_kind():
    assert schema_kinds(task_list_schema(None)) == known_kinds()


def test_an_empty_marker_allows_nothing_and_schemas_are_independent():
    assert taught_kinds([("Task-Empty", "<!-- SCHEMA_TASKS: -->")]) == ()
    first, second = task_list_schema(["send"]), task_list_schema(["react"])
    assert schema_kinds(first) == ("send",) and schema_kinds(second) == ("react",)


#: What each shipped prompt teaches: the original's markers, plus what Cindy's own prompts add.
SHIPPED_TEACHING = {
    "configdir/prompts/Instructions.md": {
        *CONVERSATIONAL_KINDS,
        "summarize",
        "clear-conversation",
        "shutdown",
    },
    "configdir/prompts/Task-Memory.md": {"remember", "note"},
    "configdir/prompts/Task-Consolidate.md": {"note", "remember"},
    "configdir/prompts/Task-Plan.md": {"plan", "intend"},
    "configdir/prompts/Task-Retrieve.md": {"retrieve"},
    "configdir/prompts/Task-Recall.md": {"recall"},
    "configdir/prompts/Task-Photo.md": {"send_media"},
    "configdir/prompts/Task-Voice.md": {"voice"},
    "configdir/prompts/Task-Schedule.md": {"schedule", "retrieve"},
    "configdir/prompts/Task-Event.md": {"event"},
    "configdir/prompts/Task-XSend.md": {"xsend"},
    "configdir/prompts/Task-Image.md": {"image"},
    "configdir/prompts/Think.md": {"think"},
    "samples/prompts/Chatbot.md": set(),
    "samples/prompts/Roleplay.md": set(),
}


def test_every_shipped_prompt_is_listed_here():
    shipped = {
        str(path.relative_to(ROOT))
        for pattern in ("configdir/prompts/*.md", "samples/prompts/*.md", "samples/agents/*/prompts/*.md")
        for path in ROOT.glob(pattern)
    }
    assert shipped == set(SHIPPED_TEACHING)


@pytest.mark.parametrize("path", sorted(SHIPPED_TEACHING))
def test_each_shipped_prompt_marks_the_kinds_it_teaches(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    assert kinds_from_prompt(text) == SHIPPED_TEACHING[path]
    for kind in SHIPPED_TEACHING[path] - {"think"}:
        assert f"`{kind}`" in text or f'"{kind}"' in text, f"{path} names {kind} but does not explain it"


def test_a_schedule_file_in_context_teaches_schedule_when_no_other_prompt_has_a_marker(agent):
    """Task-Schedule keeps its marker whatever the other prompts carry: a prompt without a marker
    teaches nothing, so without its own marker nothing would teach `schedule`."""
    from llm.prompt.builder import RetrievedPage
    from llm.prompt.unlocked import prompts_unlocked_by_context

    present = [("Instructions", "# Format\n\nAnswer with JSON tasks."), ("Chatbot", "# Chatbot\nBe kind.")]
    unlocked = prompts_unlocked_by_context(agent, [RetrievedPage("file:schedule.json", "{}")], present)
    assert [name for name, _text in unlocked] == ["Task-Schedule"]
    assert "schedule" in taught_kinds(present + unlocked)
