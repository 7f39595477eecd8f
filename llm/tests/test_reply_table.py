"""Replies in both formats, with the tasks the original system produced for each.

The expectations follow the original's parsers: its legacy Markdown parser as it was before the switch
to JSON (headings `# «kind» [number]`, `delay: N` wait bodies, ```` ```markdown ```` fences stripped,
text before the first heading sent), and its JSON parser (ids kept and deduplicated with the last one winning, a `think`
reusing an id cancels the task, `depends_on` kept). `think` tasks are left out of the comparison: the
original dropped them while parsing, Cindy drops them in planning. Where Cindy reads a reply
differently on purpose, the case is in `DIFFERENCES` below and in docs/compatibility.md.
"""

from __future__ import annotations

import json

import pytest

from llm.parsing import parse_reply


def _acted(reply: str) -> list[tuple]:
    result = parse_reply(reply)
    return [(t.kind, t.params, t.id, t.depends_on) for t in result.tasks if t.kind != "think"]


def send(text, reply_to=None, id=None, depends_on=None):  # noqa: A002 - the task field's name
    return ("send", {"text": text, "reply_to": reply_to}, id, depends_on)


def task(kind, params=None, id=None, depends_on=None):  # noqa: A002
    return (kind, params or {}, id, depends_on)


def j(*items: dict) -> str:
    return json.dumps(list(items), ensure_ascii=False)


MARKDOWN = [
    ("send", "# «send»\n\nI'll reply shortly.", [send("I'll reply shortly.")]),
    ("wait", "# «wait»\n\ndelay: 10", [task("wait", {"delay": 10.0})]),
    (
        "all-kinds",
        "# «send»\n\nI'll reply shortly.\n\n# «wait»\n\ndelay: 10\n\n# «sticker»\n\nWendyDancer\n👍\n\n"
        "# «shutdown»\n\nBecause I was asked to stop.\n\n# «clear-conversation»\n",
        [
            send("I'll reply shortly."),
            task("wait", {"delay": 10.0}),
            task("sticker", {"sticker_set": "WendyDancer", "name": "👍", "reply_to": None}),
            task("shutdown"),
            task("clear-conversation"),
        ],
    ),
    ("clear-only", "# «clear-conversation»", [task("clear-conversation")]),
    (
        "reply-ids",
        "# «send» 12345\n\nThis is a reply.\n\n# «sticker» 54321\n\nWendyDancer\n👍\n",
        [
            send("This is a reply.", reply_to=12345),
            task("sticker", {"sticker_set": "WendyDancer", "name": "👍", "reply_to": 54321}),
        ],
    ),
    ("fenced-reply", "```markdown\n# «send»\nHi\n```", [send("Hi")]),
    ("fenced-reply-newline", "```markdown\n# «send»\nHi\n```\n", [send("Hi")]),
    ("fenced-body", "# «send»\n```markdown\n**bold** text\n```", [send("**bold** text\n")]),
    ("text-then-heading", "Hello\n# «wait»\ndelay: 5", [send("Hello"), task("wait", {"delay": 5.0})]),
    ("think-then-send", "# «think»\nHmm.\n# «send»\nHi", [send("Hi")]),
    (
        "remember-json-fence",
        "# «remember»\n```json\nLikes tea\n```",
        [task("remember", {"content": "Likes tea"})],
    ),
    (
        "remember-bare-fence",
        "# «remember»\n```\nLikes tea\n```",
        [task("remember", {"content": "Likes tea"})],
    ),
    ("remember-empty", "# «remember»\n\n# «send»\nok", [send("ok")]),
    (
        "retrieve-keeps-urls",
        "# «retrieve»\nhttps://a.example/x\nnot a url\nhttp://b.example/",
        [task("retrieve", {"urls": ["https://a.example/x", "http://b.example/"]})],
    ),
    ("retrieve-no-urls", "# «retrieve»\nnothing to fetch\n# «send»\nok", [send("ok")]),
    ("wait-fraction", "# «wait»\ndelay: 2.5", [task("wait", {"delay": 2.0})]),
    ("kind-case", "# «Send»\nHi", [send("Hi")]),
    ("block", "# «block»", [task("block")]),
    ("unblock", "# «unblock»\n", [task("unblock")]),
    ("preamble-dropped", "# Title\nSome text\n# «send»\nHi", [send("Hi")]),
    (
        "sticker-extra-lines",
        "# «sticker»\nWendyDancer\n😉\nextra",
        [task("sticker", {"sticker_set": "WendyDancer", "name": "😉", "reply_to": None})],
    ),
    ("heading-trailing-words", "# «send» 42 trailing words\nHi", [send("Hi", reply_to=42)]),
    (
        "two-sends",
        "# «send»\nFirst\n\n# «send»\nSecond",
        [send("First"), send("Second")],
    ),
]

JSON = [
    ("plain", j({"kind": "send", "text": "hi"}), [send("hi")]),
    ("fenced", "```json\n" + j({"kind": "send", "text": "hi"}) + "\n```", [send("hi")]),
    ("empty-list", "[]", []),
    ("empty-reply", "", []),
    (
        "same-id-last-wins",
        j({"kind": "send", "id": "a", "text": "one"}, {"kind": "send", "id": "a", "text": "two"}),
        [send("two", id="a")],
    ),
    (
        "last-wins-at-its-place",
        j(
            {"kind": "send", "id": "x", "text": "1"},
            {"kind": "send", "id": "y", "text": "2"},
            {"kind": "send", "id": "x", "text": "3"},
        ),
        [send("2", id="y"), send("3", id="x")],
    ),
    (
        "think-cancels",
        j({"kind": "send", "id": "s", "text": "hi"}, {"kind": "think", "id": "s", "text": "no"}),
        [],
    ),
    (
        "numeric-id-same-as-text",
        j({"kind": "send", "id": 5, "text": "a"}, {"kind": "send", "id": "5", "text": "b"}),
        [send("b", id="5")],
    ),
    ("id-stripped", j({"kind": "send", "id": " a ", "text": "x"}), [send("x", id="a")]),
    ("depends-on-text", j({"kind": "send", "text": "x", "depends_on": "a"}), [send("x", depends_on=("a",))]),
    (
        "depends-on-list",
        j({"kind": "send", "id": "b", "text": "x", "depends_on": ["a", "c"]}),
        [send("x", id="b", depends_on=("a", "c"))],
    ),
    (
        "remember-id",
        j({"kind": "remember", "id": "m1", "content": "Likes tea"}),
        [task("remember", {"content": "Likes tea"}, id="m1")],
    ),
    (
        "remember-delete",
        j({"kind": "remember", "id": "m1", "content": ""}),
        [task("remember", {"content": ""}, id="m1")],
    ),
    (
        "remember-created",
        j({"kind": "remember", "content": "Met", "created": "2025-01-15"}),
        [task("remember", {"content": "Met", "created": "2025-01-15"})],
    ),
    (
        "plan-id",
        j({"kind": "plan", "id": "p", "content": "Bake"}),
        [task("plan", {"content": "Bake"}, id="p")],
    ),
    ("wait", j({"kind": "wait", "delay": 0}), [task("wait", {"delay": 0.0})]),
    (
        "react",
        j({"kind": "react", "emoji": "❤️", "message_id": "3"}),
        [task("react", {"emoji": "❤", "message_id": 3})],
    ),
    (
        "sticker",
        j({"kind": "sticker", "sticker_set": "S", "name": "😉", "reply_to": 7}),
        [task("sticker", {"sticker_set": "S", "name": "😉", "reply_to": 7})],
    ),
    (
        "retrieve",
        j({"kind": "retrieve", "urls": ["https://a.example/"]}),
        [task("retrieve", {"urls": ["https://a.example/"]})],
    ),
    ("retrieve-empty-dropped", j({"kind": "retrieve", "urls": []}, {"kind": "block"}), [task("block")]),
    ("kind-case", j({"kind": "SEND", "text": "x"}), [send("x")]),
    ("unblock", j({"kind": "unblock"}), [task("unblock")]),
    ("reply-to", j({"kind": "send", "text": "x", "reply_to": 12}), [send("x", reply_to=12)]),
]


@pytest.mark.parametrize(("reply", "expected"), [c[1:] for c in MARKDOWN], ids=[c[0] for c in MARKDOWN])
def test_markdown_replies_give_the_originals_tasks(reply, expected):
    assert _acted(reply) == expected


@pytest.mark.parametrize(("reply", "expected"), [c[1:] for c in JSON], ids=[c[0] for c in JSON])
def test_json_replies_give_the_originals_tasks(reply, expected):
    assert _acted(reply) == expected


def test_the_table_covers_at_least_forty_replies():
    assert len(MARKDOWN) + len(JSON) >= 40


# Cindy reads these differently from the original, on purpose (docs/compatibility.md).
DIFFERENCES = [
    # The original rejected the whole reply for one unknown block; Cindy keeps the valid tasks.
    ("unknown-kind", "# «send»\nA\n# «launch»\nx", [send("A")], 'kind "launch" is unknown'),
    # The original rejected the whole reply when a wait block had no delay line.
    ("wait-without-delay", "# «wait»\nsoon\n# «send»\nok", [send("ok")], "delay: <seconds>"),
    # The oldest sticker block (name only) uses the agent's first sticker set (filled in by planning).
    (
        "sticker-name-only",
        "# «sticker»\n👍",
        [task("sticker", {"sticker_set": "", "name": "👍", "reply_to": None})],
        None,
    ),
    # Invalid JSON was retried by the original; Cindy repairs it.
    ("repaired-json", '[{"kind": "send", "text": "hi",}]', [send("hi")], None),
    # The original sent a reply without any task heading as plain text; Cindy never sends text that
    # is not a task list (issue 36 #8): the node gets an error line instead.
    ("plain-text", "Hello there", [], "holds no task"),
    ("plain-text-lines", "Hello there.\nHow are you?", [], "holds no task"),
    # `#«send»` (no space) is no task heading, so this reply holds no task either.
    ("no-space-heading-is-text", "#«send»\nHi", [], "holds no task"),
]


@pytest.mark.parametrize(
    ("reply", "expected", "error"), [c[1:] for c in DIFFERENCES], ids=[c[0] for c in DIFFERENCES]
)
def test_deliberate_differences(reply, expected, error):
    result = parse_reply(reply)
    assert _acted(reply) == expected
    if error:
        assert any(error in line for line in result.errors)
