"""SCHEMA_TASKS markers and the reply schema they shape (the original's rules)."""

from __future__ import annotations

from llm.task_schema import allowed_kinds, kinds_from_prompt, schema_kinds, task_list_schema
from llm.tasks import known_kinds


def test_one_marker_names_one_or_several_kinds():
    assert kinds_from_prompt("<!-- SCHEMA_TASKS: send -->\n\n# Instructions") == {"send"}
    assert kinds_from_prompt("<!-- SCHEMA_TASKS: send, react, sticker -->") == {"send", "react", "sticker"}


def test_markers_add_up_and_ignore_case_and_spaces():
    prompt = "<!-- SCHEMA_TASKS: send, react -->\n# A\n<!-- schema_tasks:  sticker , wait -->\n# B"
    assert kinds_from_prompt(prompt) == {"send", "react", "sticker", "wait"}
    assert kinds_from_prompt("# Instructions\n\nSome text.") == set()


def test_allowed_kinds_is_the_union_in_canonical_order_without_unknown_names():
    texts = [
        "<!-- SCHEMA_TASKS: wait, send -->",
        "<!-- SCHEMA_TASKS: nonexistent_task, remember -->",
        "plain",
    ]
    assert allowed_kinds(texts) == ("send", "wait", "remember")


def test_no_marker_anywhere_means_every_kind():
    assert allowed_kinds(["# Instructions", "# Chatbot"]) is None
    assert schema_kinds(task_list_schema(None)) == known_kinds()


def test_an_empty_marker_allows_nothing_and_schemas_are_independent():
    assert allowed_kinds(["<!-- SCHEMA_TASKS: -->"]) == ()
    first, second = task_list_schema(["send"]), task_list_schema(["react"])
    assert schema_kinds(first) == ("send",) and schema_kinds(second) == ("react",)
