"""A corpus of hostile replies: each gives a clear error or a bounded action, never an exception.

Families: deep nesting, quadratic patterns, huge numbers, lone surrogates, oversized fields, malformed
URLs. Parse time is not asserted here (bench/bench_parsing.py prints it against the 100 ms goal);
these tests pin the structural bounds that keep it low: no recursion escapes, the decoder and
json_repair see a bounded number of characters.
"""

from __future__ import annotations

import json
import sys

import json_repair
import pytest

from llm import parsing
from llm.parsing import parse_reply
from llm.tasks import MAX_MESSAGE_ID, MAX_SEND_PARTS, MAX_WAIT_SECONDS, TELEGRAM_MESSAGE_LIMIT


def j(*items: dict) -> str:
    return json.dumps(list(items), ensure_ascii=False)


class _CountingDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__()
        self.chars = 0
        self.calls = 0

    def raw_decode(self, s, idx=0):
        self.calls += 1
        self.chars += len(s) - idx
        return super().raw_decode(s, idx)


@pytest.fixture
def work(monkeypatch):
    """Counts what each parse hands to the exact decoder and to json_repair."""
    decoder = _CountingDecoder()
    monkeypatch.setattr(parsing, "_DECODER", decoder)
    repaired: list[int] = []
    real = json_repair.loads
    monkeypatch.setattr(
        parsing.json_repair, "loads", lambda text, *a, **k: repaired.append(len(text)) or real(text)
    )
    return decoder, repaired


DEEP = [
    ("brackets", "[" * 20000),
    ("objects", '{"a":' * 20000),
    ("task-objects", '[{"kind":' * 3000),
    ("mixed", "[{" * 10000 + "]}" * 10000),
    ("brackets-1mb", "[" * 1_000_000),
]


@pytest.mark.parametrize("reply", [c[1] for c in DEEP], ids=[c[0] for c in DEEP])
def test_deep_nesting_is_a_clear_error_without_recursion_escaping(reply, work):
    result = parse_reply(reply)
    assert result.tasks == []
    assert f"nests brackets more than {parsing.MAX_NESTING} deep" in result.errors[0]
    assert "nothing was sent" in result.errors[0]
    decoder, repaired = work
    assert decoder.chars <= parsing.SCAN_BUDGET_FACTOR * len(reply) + 10_000 + 2 * len(reply)
    assert repaired == []  # nothing nested that deep reaches json_repair


def test_parsing_survives_a_low_recursion_limit():
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)
    try:
        result = parse_reply("[" * 20000 + "1" + "]" * 20000)
    finally:
        sys.setrecursionlimit(limit)
    assert result.tasks == [] and result.errors


QUADRATIC = [
    ("kind-2500", '{"kind"' * 2500),
    ("kind-5000", '{"kind"' * 5000),
    ("kind-1mb", '{"kind"' * 140_000),
    ("unclosed-string", '[{"kind":"send","text":"' + "x" * 30_000),
    ("unclosed-string-1mb", '[{"kind":"send","text":"' + "x" * 1_000_000),
    ("escaped-quotes", '[{"kind":"send","text":"' + '\\"' * 15_000),
    ("open-pairs", '[{"a":1}' * 120_000),
    ("lbrace-quote", '{"' * 500_000),
    ("commas", "[" + "1," * 15_000),
    ("empty-lists", "[]" * 500_000),
]


@pytest.mark.parametrize("reply", [c[1] for c in QUADRATIC], ids=[c[0] for c in QUADRATIC])
def test_quadratic_patterns_do_bounded_work(reply, work):
    result = parse_reply(reply)
    decoder, repaired = work
    assert decoder.calls <= 2 * parsing.MAX_SCAN_ATTEMPTS + 2
    assert decoder.chars <= (parsing.SCAN_BUDGET_FACTOR + 1) * len(reply) + 20_000 + len(reply)
    assert sum(repaired) <= parsing.MAX_REPAIR_TOTAL
    assert all(size <= parsing.MAX_REPAIR_CHARS for size in repaired)
    assert len(result.tasks) <= parsing.MAX_TASKS


def test_an_oversized_reply_is_refused():
    result = parse_reply("x" * (parsing.MAX_REPLY_CHARS + 1))
    assert result.tasks == [] and "more than" in result.errors[0]


def test_thousands_of_tasks_are_cut_with_an_error():
    result = parse_reply(j(*[{"kind": "wait", "delay": 1}] * 2000))
    assert len(result.tasks) == parsing.MAX_TASKS
    assert "only the first 500" in result.errors[0]


HUGE_WAITS = [1e308, 1e12, "1e999", 10**400]


@pytest.mark.parametrize("delay", HUGE_WAITS, ids=[str(d)[:8] for d in HUGE_WAITS])
def test_huge_waits_are_bounded_with_a_note(delay):
    reply = (
        j({"kind": "wait", "delay": delay})
        if not isinstance(delay, int)
        else f'[{{"kind": "wait", "delay": {delay}}}]'
    )
    result = parse_reply(reply)
    assert [t.params["delay"] for t in result.tasks] == [MAX_WAIT_SECONDS]
    assert result.errors == [] and "longer than a week" in result.notes[0]


@pytest.mark.parametrize("delay", [-1, -1e308, "-5"])
def test_negative_waits_run_as_zero_with_a_note(delay):
    result = parse_reply(j({"kind": "wait", "delay": delay}))
    assert [t.params["delay"] for t in result.tasks] == [0.0] and "negative" in result.notes[0]


@pytest.mark.parametrize(
    "field",
    [
        {"kind": "send", "text": "x", "reply_to": 10**30},
        {"kind": "send", "text": "x", "reply_to": "1000000000000000000000000000000"},
        {"kind": "send", "text": "x", "reply_to": MAX_MESSAGE_ID + 1},
        {"kind": "send", "text": "x", "reply_to": -3},
        {"kind": "react", "emoji": "👍", "message_id": 10**30},
        {"kind": "sticker", "sticker_set": "S", "name": "x", "reply_to": 1e300},
        {"kind": "send", "text": "x", "reply_to": "9" * 5000},
    ],
    ids=["int", "text", "just-over", "negative", "react", "float", "long-digits"],
)
def test_message_ids_out_of_telegrams_range_are_refused_at_validation(field):
    result = parse_reply(j(field))
    assert result.tasks == []
    assert "message id" in result.errors[0]


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        ('[{"kind": "send", "text": "a\\ud800b"}]', "text"),
        ('[{"kind": "send", "text": "\\udfff"}]', "text"),
        ('[{"kind": "remember", "content": "likes \\ud83d tea"}]', "content"),
        ('[{"kind": "sticker", "sticker_set": "S", "name": "\\ud800"}]', "name"),
    ],
    ids=["high", "low-alone", "remember", "sticker"],
)
def test_lone_surrogates_are_replaced_with_a_note(raw, param):
    result = parse_reply(raw)
    (task,) = result.tasks
    value = task.params[param]
    value.encode("utf-8")  # sendable
    assert "\ufffd" in value and "lone surrogates" in result.notes[0]


def test_a_valid_surrogate_pair_is_kept():
    result = parse_reply('[{"kind": "send", "text": "\\ud83d\\ude00"}]')
    assert result.tasks[0].params["text"] == "😀" and result.notes == []


def test_a_two_million_character_send_is_split_and_capped(settings):
    # The per-turn bound (CINDY_MAX_TURN_TEXT_CHARS, default 12,288) would cut the fourth part
    # mid-sentence; it is tested apart (test_reply_bounds.py). Here: the split into MAX_SEND_PARTS.
    settings.CINDY_MAX_TURN_TEXT_CHARS = 10_000_000
    text = ("A sentence that goes on. " * 80_000)[:2_000_000]
    result = parse_reply(j({"kind": "send", "id": "long", "text": text, "reply_to": 5}))
    parts = [t.params["text"] for t in result.tasks]
    assert len(parts) == MAX_SEND_PARTS
    assert all(0 < len(p) <= TELEGRAM_MESSAGE_LIMIT for p in parts)
    assert all(p.endswith(".") for p in parts)  # cut at sentence ends
    assert [t.params["reply_to"] for t in result.tasks] == [5, None, None, None]
    assert result.tasks[0].id == "long" and result.tasks[1].id == "long#2"
    assert "split into 4 messages" in result.notes[0] and "were cut" in result.notes[0]


def test_a_long_send_just_over_the_limit_becomes_two_messages_without_loss():
    text = "word " * 1000  # 5,000 characters
    result = parse_reply(j({"kind": "send", "text": text}))
    parts = [t.params["text"] for t in result.tasks]
    assert len(parts) == 2 and " ".join(parts).split() == text.split()
    assert "were cut" not in result.notes[0]


def test_oversized_ids_and_dependency_lists_are_bounded():
    result = parse_reply(
        j(
            {"kind": "send", "id": "x" * 500, "text": "a"},
            {"kind": "send", "text": "b", "depends_on": [str(i) for i in range(5000)]},
            {"kind": "retrieve", "urls": [f"https://e{i}.example/" for i in range(1000)]},
        )
    )
    assert "ids are at most 100 characters" in result.errors[0]
    send, retrieve = result.tasks
    assert len(send.depends_on) == 50 and len(retrieve.params["urls"]) == 20


MALFORMED_URLS = [
    ("http://[::1/", "malformed"),
    ("http://x:99999/", "malformed"),
    ("http://h:1:2/", "malformed"),
    ("http://[::1", "malformed"),
    ("javascript:alert(1)", "not an http(s) URL"),
    ("ftp://example.org/", "not an http(s) URL"),
    ("http:///nohost", "not an http(s) URL"),
    ("file:", "names no document"),
    ("", "not an http(s) URL"),
]


@pytest.mark.parametrize(("url", "message"), MALFORMED_URLS, ids=[c[0] or "empty" for c in MALFORMED_URLS])
def test_malformed_retrieve_urls_are_clear_task_errors(url, message):
    result = parse_reply(j({"kind": "retrieve", "urls": [url]}, {"kind": "send", "text": "still here"}))
    assert [t.kind for t in result.tasks] == ["send"]
    assert message in result.errors[0]


def test_non_text_urls_and_fields_are_clear_errors():
    result = parse_reply(
        j(
            {"kind": "retrieve", "urls": [123]},
            {"kind": "retrieve", "urls": {"a": 1}},
            {"kind": "send", "text": ["x"]},
            {"kind": "remember", "content": 5},
        )
    )
    assert result.tasks == [] and len(result.errors) == 4


@pytest.mark.parametrize(
    "reply",
    [
        '[{"kind": "send", "text": "x", "reply_to": ' + "9" * 5000 + "}]",
        'Here: [{"kind": "wait", "delay": ' + "9" * 5000 + "}]",
        '[{"kind": "wait", "delay": 1e99999}]',
    ],
    ids=["reply-to-digits", "delay-digits-in-prose", "float-exponent"],
)
def test_numbers_beyond_any_range_never_raise(reply):
    result = parse_reply(reply)
    assert result.errors or result.notes
    assert all(t.params.get("delay", 0) <= MAX_WAIT_SECONDS for t in result.tasks)
