"""What a reply may make the agent send: only tasks (a JSON task list, or the original's Markdown
task blocks), never other text; nothing from a reply cut off inside a text; at most
CINDY_MAX_TURN_TEXT_CHARS characters of sends per turn; and a reason whenever a reply yields nothing."""

from __future__ import annotations

import json

import pytest

from llm.parsing import parse_reply


def _sends(result) -> list[str]:
    return [t.params["text"] for t in result.tasks if t.kind == "send"]


@pytest.mark.parametrize(
    "reply",
    ["I think I will say hello! No JSON here.", "Sure.\n\nHello there, how are you?", "# Hello\nplain"],
)
def test_text_that_is_not_a_task_list_is_never_sent_and_says_why(reply):
    result = parse_reply(reply)

    assert result.tasks == []
    assert result.errors and "holds no task" in result.errors[0] and "nothing was sent" in result.errors[0]


def test_a_legacy_markdown_reply_still_parses_as_the_original_did():
    result = parse_reply("Hi!\n\n# «wait»\ndelay: 5\n\n# «send»\nHow are you?\n")

    assert [t.kind for t in result.tasks] == ["send", "wait", "send"]
    assert _sends(result) == ["Hi!", "How are you?"]
    assert result.errors == []


@pytest.mark.parametrize(
    "reply",
    [
        '[{"kind":"send","text":"half',
        '[{"kind": "think", "text": "ok"}, {"kind":"send","text":"I was about to say that the',
        '```json\n[{"kind":"send","text":"half',
    ],
)
def test_a_reply_cut_off_inside_a_text_sends_nothing_of_it(reply):
    result = parse_reply(reply)

    assert _sends(result) == []
    assert any("cut off" in error for error in result.errors)


def test_a_list_missing_only_its_closing_brackets_is_still_repaired():
    assert _sends(parse_reply('[{"kind": "send", "text": "one"}, {"kind": "send", "text": "two"')) == [
        "one",
        "two",
    ]


def test_a_reply_nested_thousands_deep_yields_nothing_and_says_why():
    result = parse_reply("[" * 5000 + "]" * 5000)

    assert result.tasks == [] and result.errors


def test_one_turn_sends_at_most_the_configured_amount_of_text_and_notes_the_rest(settings):
    settings.CINDY_MAX_TURN_TEXT_CHARS = 10_000
    reply = json.dumps(
        [{"kind": "send", "text": "a" * 4000}, {"kind": "react", "emoji": "👍", "message_id": 3}]
        + [{"kind": "send", "text": "b" * 4000}, {"kind": "send", "text": "c" * 4000}]
        + [{"kind": "send", "text": "d" * 50}]
    )

    result = parse_reply(reply)

    assert _sends(result) == ["a" * 4000, "b" * 4000, "c" * 2000]
    assert [t.kind for t in result.tasks] == ["send", "react", "send", "send"]
    assert any("CINDY_MAX_TURN_TEXT_CHARS" in note and "2,050 dropped" in note for note in result.notes)


def test_a_huge_single_send_is_cut_to_the_turn_limit(settings):
    settings.CINDY_MAX_TURN_TEXT_CHARS = 12_288

    result = parse_reply(json.dumps([{"kind": "send", "text": "x" * 300_000}]))

    assert sum(len(text) for text in _sends(result)) == 12_288
    assert result.notes
