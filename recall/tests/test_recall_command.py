"""`manage.py recall AGENT "query"`: an operator's search from the terminal."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from recall.tests.conftest import ALICE, BOB

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)


def _recall(*args) -> str:
    out = StringIO()
    call_command("recall", *args, stdout=out)
    return out.getvalue()


def test_it_prints_the_best_hits_as_lines_or_json(wendy, say):
    alice, _ = say(ALICE, "we planned the wedding for June")
    say(BOB, "the wedding cake was huge")

    lines = _recall("Wendy", "weddings").splitlines()
    assert len(lines) == 2 and all("message #" in line for line in lines)

    [hit] = [
        json.loads(line)
        for line in _recall("Wendy", "weddings", "--conversation", str(alice.pk), "--json").splitlines()
    ]
    assert (hit["kind"], hit["conversation_id"], hit["message_id"]) == ("message", alice.pk, 1)
    assert hit["text"] == "we planned the wedding for June"
    assert _recall("Wendy", "weddings", "--limit", "1").count("\n") == 1
    assert _recall("Wendy", "submarine") == "no hits\n"


def test_bad_input_is_refused_with_the_fix(wendy, say):
    say(ALICE, "hello")
    with pytest.raises(CommandError, match="the query: the query '!!' has no words"):
        _recall("Wendy", "!!")
    with pytest.raises(CommandError, match="--limit: limit 0 is out of range: ask for 1 to 100"):
        _recall("Wendy", "hello", "--limit", "0")
    with pytest.raises(CommandError, match="--conversation 999999: Wendy has no such conversation"):
        _recall("Wendy", "hello", "--conversation", "999999")
    with pytest.raises(CommandError, match="no agent named Nobody"):
        _recall("Nobody", "hello")


def test_the_mode_picks_the_ranking(wendy, say):
    say(ALICE, "Jane finally tied the knot on Saturday")
    say(ALICE, "the bus was late again")

    first = _recall("Wendy", "when did Jane get married?", "--mode", "vectors").splitlines()[0]
    assert first.endswith(": Jane finally tied the knot on Saturday")
    assert _recall("Wendy", "married", "--mode", "fulltext") == "no hits\n"
    assert "Jane finally tied the knot" in _recall("Wendy", "married", "--mode", "fused")
