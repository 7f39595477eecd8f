"""The recall evaluation set and its scoring: the shipped files are what their generator writes and
valid, a bad file is refused by name, and the baseline is plain BM25. No database is used."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def quality():
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(BENCH / "recall_eval"))
    try:
        import make_eval
        import recall_quality

        yield recall_quality, make_eval
    finally:
        sys.path.remove(str(BENCH))
        sys.path.remove(str(BENCH / "recall_eval"))


def test_the_shipped_set_is_what_its_generator_writes_and_is_valid(quality):
    recall_quality, make_eval = quality
    sets = recall_quality.load_sets(BENCH / "recall_eval")

    assert [s["name"] for s in sets] == [name for name, *_ in make_eval.CONVERSATIONS]
    for (name, size, seed, facts), data in zip(make_eval.CONVERSATIONS, sets, strict=True):
        assert data == make_eval.conversation(name, size, seed, facts)
        assert len(data["messages"]) >= size
        texts = {m["id"]: m["text"] for m in data["messages"]}
        for q in data["questions"]:
            assert q["question"] not in texts.values() and all(texts[a] for a in q["answers"])


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"messages": [], "questions": []}, "the top level needs a non-empty list 'messages'"),
        (
            {
                "messages": [{"id": 1, "text": "hi", "from": "bot"}],
                "questions": [{"question": "q", "answers": [1]}],
            },
            "messages[0] (id 1) has 'from' 'bot': use 'user' or 'agent'",
        ),
        (
            {"messages": [{"id": 1, "text": "hi"}], "questions": [{"question": "q", "answers": [2]}]},
            "questions[0] has answers [2]: list the ids of messages of this file",
        ),
        (
            {
                "messages": [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}],
                "questions": [{"question": "q", "answers": [1]}],
            },
            "messages[1] repeats the id 1",
        ),
    ],
)
def test_a_bad_file_is_refused_with_its_place_and_the_rule(quality, tmp_path, data, error):
    recall_quality, _ = quality
    path = tmp_path / "set.json"
    path.write_text(json.dumps(data))

    with pytest.raises(recall_quality.EvalFileError) as refused:
        recall_quality.load_sets(path)

    assert str(path) in str(refused.value) and error in str(refused.value)


def test_the_baseline_is_plain_okapi_bm25_without_stemming(quality):
    recall_quality, _ = quality
    messages = [
        {"id": 1, "text": "the wedding was lovely"},
        {"id": 2, "text": "weddings are expensive"},
        {"id": 3, "text": "the the the dog"},
    ]

    assert recall_quality.bm25_ranking(messages, "Wedding") == [1]
    # by hand: idf of "wedding" (1 of 3 documents), a 4-word document, average length 11/3
    idf = math.log((3 - 1 + 0.5) / (1 + 0.5) + 1)
    expected = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 4 / (11 / 3)))
    scores = recall_quality.bm25_scores(messages, "wedding")
    assert scores == {1: pytest.approx(expected)}
    assert recall_quality.recall_at([3, 1, 2], [1, 2], k=2) == 0.5
