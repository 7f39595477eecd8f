from __future__ import annotations

import json

import pytest

from llm.parsing import parse_reply


def _kinds(result):
    return [t.kind for t in result.tasks]


def test_plain_json_array():
    result = parse_reply('[{"kind": "send", "text": "hi", "reply_to": 5}]')

    assert result.errors == []
    assert result.tasks[0].params == {"text": "hi", "reply_to": 5}


def test_fenced_json_with_prose_around_it():
    reply = 'Sure! Here is my plan:\n```json\n[{"kind": "think", "text": "hm"}, {"kind": "send", "text": "ok"}]\n```\nDone.'

    assert _kinds(parse_reply(reply)) == ["think", "send"]


def test_prose_around_bare_json():
    assert _kinds(parse_reply('I will answer now: [{"kind": "send", "text": "yo"}] — that is all')) == [
        "send"
    ]


def test_slightly_broken_json_is_repaired():
    broken = '[{"kind": "send", "text": "one",}, {"kind": "wait" "delay": 5}, {"kind": "send", "text": "two"'

    result = parse_reply(broken)

    assert _kinds(result) == ["send", "wait", "send"]
    assert result.tasks[1].params == {"delay": 5.0}


def test_single_object_and_tasks_wrapper_are_accepted():
    assert _kinds(parse_reply('{"kind": "send", "text": "x"}')) == ["send"]
    assert _kinds(parse_reply('{"tasks": [{"kind": "block"}]}')) == ["block"]


def test_empty_reply_and_empty_list_mean_nothing_to_do():
    assert parse_reply("").tasks == [] and parse_reply("").errors == []
    assert parse_reply("[]").tasks == [] and parse_reply("[]").errors == []


def test_prose_without_tasks_is_not_sent_and_the_error_says_why():
    result = parse_reply("I don't feel like answering.")

    assert result.tasks == []
    assert result.errors[0].startswith("the reply holds no task")


def test_broken_json_without_tasks_is_an_error_not_a_send():
    result = parse_reply('[{"kind": "send", "text": "hi"')

    assert [t.kind for t in result.tasks] == ["send"]  # repaired
    result = parse_reply('{"kind" {"kind" {"kind"')
    assert result.tasks == [] and "not a JSON list of tasks" in result.errors[0]


def test_legacy_markdown_blocks():
    reply = (
        "# «think»\nShe wants bread.\n\n"
        "# «send»\nHello there!\nSecond line.\n\n"
        "# «sticker» 42\nWendyDancer\n😉\n\n"
        "# «retrieve»\nhttps://example.com/a\nnot a url\nhttp://example.org/b\n"
    )

    result = parse_reply(reply)

    assert result.errors == []
    assert _kinds(result) == ["think", "send", "sticker", "retrieve"]
    assert result.tasks[1].params == {"text": "Hello there!\nSecond line.", "reply_to": None}
    assert result.tasks[2].params == {"sticker_set": "WendyDancer", "name": "😉", "reply_to": 42}
    assert result.tasks[3].params == {"urls": ["https://example.com/a", "http://example.org/b"]}


VALID = [
    ({"kind": "send", "text": "hi", "reply_to": "12"}, {"text": "hi", "reply_to": 12}),
    (
        {"kind": "sticker", "sticker_set": "S", "name": "😉"},
        {"sticker_set": "S", "name": "😉", "reply_to": None},
    ),
    ({"kind": "react", "emoji": "❤️", "message_id": 3}, {"emoji": "❤", "message_id": 3}),
    ({"kind": "wait", "delay": 0}, {"delay": 0.0}),
    ({"kind": "block"}, {}),
    ({"kind": "unblock"}, {}),
    ({"kind": "remember", "content": "likes rye"}, {"content": "likes rye"}),
    ({"kind": "plan", "content": "bake"}, {"content": "bake"}),
    ({"kind": "think", "text": "..."}, {"text": "..."}),
    ({"kind": "retrieve", "urls": ["https://a.example/"]}, {"urls": ["https://a.example/"]}),
    ({"kind": "clear-conversation"}, {}),
    ({"kind": "shutdown"}, {}),
]


@pytest.mark.parametrize(("raw", "params"), VALID, ids=[v[0]["kind"] for v in VALID])
def test_every_kind_validates(raw, params):
    result = parse_reply(json.dumps([raw]))

    assert result.errors == []
    assert result.tasks[0].kind == raw["kind"] and result.tasks[0].params == params


INVALID = [
    ({"kind": "send", "text": 5}, '"text" is int'),
    ({"kind": "send", "text": "x", "reply_to": "abc"}, "\"reply_to\" is 'abc'"),
    ({"kind": "sticker", "name": "😉"}, '"sticker_set" is missing'),
    ({"kind": "react", "emoji": "🦖", "message_id": 1}, "not one of Telegram's reactions"),
    ({"kind": "react", "emoji": "👍"}, '"message_id" is missing'),
    ({"kind": "wait", "delay": float("nan")}, "NaN"),
    ({"kind": "wait", "delay": "soon"}, "number of seconds"),
    ({"kind": "remember", "content": ""}, '"content" is missing'),
    ({"kind": "plan"}, '"content" is missing'),
    ({"kind": "retrieve", "urls": ["ftp://x.example/"]}, "not an http(s) URL"),
    ({"kind": "retrieve", "urls": ["http://[::1/"]}, "is malformed"),
    ({"kind": "launch-missiles"}, 'kind "launch-missiles" is unknown'),
    ({"text": "no kind"}, 'no "kind"'),
]


@pytest.mark.parametrize(("raw", "message"), INVALID, ids=[str(i) for i in range(len(INVALID))])
def test_invalid_tasks_are_reported_and_dropped(raw, message):
    result = parse_reply(json.dumps([raw, {"kind": "send", "text": "still here"}]))

    assert [t.params.get("text") for t in result.tasks] == ["still here"]
    assert len(result.errors) == 1 and message in result.errors[0]
    assert result.errors[0].startswith("task 1")


def test_unicode_survives():
    text = "Привет 👋 — ¿qué tal? 你好 \u200d"

    assert (
        parse_reply(json.dumps([{"kind": "send", "text": text}], ensure_ascii=False)).tasks[0].params["text"]
        == text
    )


def test_huge_reply_is_parsed(settings):
    settings.CINDY_MAX_TURN_TEXT_CHARS = 10_000_000  # the bound on what one turn sends is tested apart
    tasks = [{"kind": "send", "text": "word " * 200} for _ in range(500)]

    result = parse_reply("```json\n" + json.dumps(tasks) + "\n```")

    assert len(result.tasks) == 500 and result.errors == []


def test_ids_as_ints_or_numeric_strings():
    result = parse_reply(
        '[{"kind": "react", "emoji": "👍", "message_id": "77"}, {"kind": "send", "text": "a", "reply_to": 5}]'
    )

    assert result.tasks[0].params["message_id"] == 77 and result.tasks[1].params["reply_to"] == 5


def test_prose_with_brackets_after_the_json_keeps_the_tasks():
    result = parse_reply('[{"kind":"send","text":"hi"}] (I hope [this] helps)')

    assert result.errors == []
    assert [t.params["text"] for t in result.tasks] == ["hi"]


def test_prose_with_braces_before_the_json_keeps_the_tasks():
    result = parse_reply('Sure {see below}: [{"kind": "send", "text": "hi"}, {"kind": "wait", "delay": 2}]')

    assert result.errors == []
    assert _kinds(result) == ["send", "wait"]


@pytest.mark.parametrize(
    "reply",
    [
        '[{"kind": "send", "text": "one"}][{"kind": "send", "text": "two"}]',
        '[{"kind": "send", "text": "one"}]\n\n[{"kind": "send", "text": "two"}]',
        '{"kind": "send", "text": "one"}\n{"kind": "send", "text": "two"}',
        '```json\n[{"kind": "send", "text": "one"}]\n```\n```json\n[{"kind": "send", "text": "two"}]\n```',
        'Here you go: {"kind": "send", "text": "one"}, {"kind": "send", "text": "two"} Bye!',
    ],
    ids=["arrays", "arrays-on-lines", "json-lines", "two-fences", "objects-in-prose"],
)
def test_consecutive_task_lists_are_joined_not_overwritten(reply):
    result = parse_reply(reply)

    assert result.errors == []
    assert [t.params["text"] for t in result.tasks] == ["one", "two"]


def test_a_valid_object_inside_a_broken_list_does_not_hide_the_others():
    reply = 'Plan: [{"kind": "send", "text": "one",}, {"kind": "send", "text": "two"}, {"kind": "block"}]'

    assert _kinds(parse_reply(reply)) == ["send", "send", "block"]


def test_prose_brackets_that_are_not_tasks_are_skipped():
    result = parse_reply('See [1] and {"a": 1}, then: [{"kind": "send", "text": "hi"}]')

    assert [t.params["text"] for t in result.tasks] == ["hi"]


def test_an_empty_list_in_prose_means_nothing_to_do():
    result = parse_reply("Nothing to add here: []")

    assert result.tasks == [] and result.errors == []


@pytest.mark.parametrize(
    ("reply", "reply_to"),
    [("# «sticker»\nWendyDancer\n", None), ("# «sticker» 42\n😉\n", 42)],
    ids=["plain", "reply"],
)
def test_legacy_sticker_block_with_only_a_name_leaves_the_set_to_planning(reply, reply_to):
    result = parse_reply(reply)

    assert result.errors == []
    name = reply.splitlines()[1]
    assert result.tasks[0].params == {"sticker_set": "", "name": name, "reply_to": reply_to}


def test_a_json_sticker_without_a_set_is_still_an_error():
    result = parse_reply('[{"kind": "sticker", "name": "😉", "sticker_set": ""}]')

    assert result.tasks == [] and '"sticker_set" is missing' in result.errors[0]


def test_a_markdown_title_before_task_json_keeps_the_tasks():
    result = parse_reply('# My answer\n\n```json\n[{"kind": "send", "text": "hi"}]\n```')

    assert [(t.kind, t.params["text"]) for t in result.tasks] == [("send", "hi")]


@pytest.mark.parametrize("written", ["http:Garden.md", "HTTPS:Garden.md"])
def test_a_hostless_http_url_naming_a_file_is_read_as_the_agents_document(written):
    # A persona written for the original may point at its documents as `http:NAME`.
    result = parse_reply(json.dumps([{"kind": "retrieve", "urls": [written]}]))

    assert result.errors == []
    assert result.tasks[0].params == {"urls": ["file:Garden.md"]}
    assert any("has no host: read as your document file:Garden.md" in note for note in result.notes)


@pytest.mark.parametrize("written", ["http:", "http:/Garden.md", "http:Garden.md?x=1", "http:two words"])
def test_a_hostless_http_url_that_is_no_plain_file_name_is_still_refused(written):
    result = parse_reply(json.dumps([{"kind": "retrieve", "urls": [written]}, {"kind": "send", "text": "x"}]))

    assert [t.kind for t in result.tasks] == ["send"]
    assert "not an http(s) URL" in result.errors[0]
