"""The `recall` task kind: planning searches the recall index and asks again with the hits shown."""

from __future__ import annotations

import json

import pytest

from agents.models import RolePrompt
from conversations.models import Conversation
from llm.parsing import parse_reply
from llm.planning import plan_turn
from llm.tests.conftest import add_message

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

FACT = "My great-grandfather worked on the narrowboat Kestrel"


def _reply(*tasks) -> str:
    return json.dumps(list(tasks), ensure_ascii=False)


def _plan(node):
    return plan_turn(node_id=node.pk, sleep=lambda seconds: None)


def _texts(request) -> str:
    return "\n".join(
        part.get("text", "") for content in request.json["contents"] for part in content["parts"]
    )


@pytest.fixture
def recalling(agent, dm, settings):
    """Wendy taught `recall`, with Alice's fact far outside a history of 4 messages."""
    settings.CINDY_HISTORY_SIZE = 4
    RolePrompt.objects.create(name="Task-Recall", text="<!-- SCHEMA_TASKS: recall -->\nSearch with recall.")
    agent.role_prompt_names = ["Task-Recall"]
    agent.save()
    add_message(dm, 1, FACT)
    for number in range(2, 21):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)
    add_message(dm, 21, "Which boat was it again?")
    return dm


def test_a_recall_is_searched_and_the_hits_shown_in_the_next_request(recalling, fake_llm, make_node, clock):
    fake_llm.reply_with(_reply({"kind": "recall", "query": "narrowboat grandfather"}))
    fake_llm.reply_with(_reply({"kind": "send", "text": "The Kestrel."}))

    result = _plan(make_node(recalling, target=21))

    assert [(t.kind, t.params["text"]) for t in result.tasks] == [("send", "The Kestrel.")]
    assert result.errors == [] and len(fake_llm.requests) == 2
    first, second = map(_texts, fake_llm.requests)
    assert "Kestrel" not in first  # not in the history, and the automatic recall found no word of it
    assert '# Recall: "narrowboat grandfather"' in second
    assert f"(message 1, Alice wrote): {FACT}" in second


def test_a_recall_that_finds_nothing_says_so(recalling, fake_llm, make_node, clock):
    fake_llm.reply_with(_reply({"kind": "recall", "query": "submarine"}))
    fake_llm.reply_with(_reply({"kind": "send", "text": "I don't remember."}))

    _plan(make_node(recalling, target=21))

    assert "Nothing found" in _texts(fake_llm.requests[1])


def test_a_repeated_recall_is_answered_from_context_without_another_call(
    recalling, fake_llm, make_node, clock
):
    fake_llm.reply_with(_reply({"kind": "recall", "query": "narrowboat"}))
    fake_llm.reply_with(
        _reply({"kind": "recall", "query": "narrowboat"}, {"kind": "send", "text": "Kestrel."})
    )
    fake_llm.reply_with(_reply({"kind": "send", "text": "never asked"}))

    result = _plan(make_node(recalling, target=21))

    assert len(fake_llm.requests) == 2
    assert [t.params["text"] for t in result.tasks] == ["Kestrel."]
    assert result.notes == [
        "recall 'narrowboat': searched already in this turn, so it was answered from context without "
        "searching again or another LLM call; the reply's other tasks ran"
    ]


def test_recall_rounds_share_the_retrieval_bound(recalling, fake_llm, make_node, settings, clock):
    settings.RETRIEVAL_MAX_ROUNDS = 2
    for word in ("kestrel", "boat", "canal", "lock", "barge"):
        fake_llm.reply_with(_reply({"kind": "recall", "query": word}))

    result = _plan(make_node(recalling, target=21))

    assert len(fake_llm.requests) == 3
    assert result.tasks == [] and "retrieval stopped after 2 rounds" in result.errors[0]
    assert "recall 'canal'" in result.errors[0]


def test_a_recall_without_the_prompt_that_teaches_it_is_an_error(agent, dm, fake_llm, make_node, clock):
    add_message(dm, 1, "Which boat was it?")
    fake_llm.reply_with(_reply({"kind": "recall", "query": "boat"}, {"kind": "send", "text": "hm"}))

    result = _plan(make_node(dm, target=1))

    assert len(fake_llm.requests) == 1
    assert result.errors[0].startswith("recall is not taught by agent Wendy's prompts")


def test_a_recall_never_finds_another_chat_s_messages(recalling, agent, fake_llm, make_node, clock):
    bob = Conversation.objects.create(agent=agent, peer_id=2002, kind=Conversation.Kind.DM, title="Bob")
    add_message(bob, 1, "My uncle sailed the narrowboat Heron", sender="Bob", sender_id=2002)
    fake_llm.reply_with(_reply({"kind": "recall", "query": "narrowboat"}))
    fake_llm.reply_with(_reply({"kind": "send", "text": "The Kestrel."}))

    _plan(make_node(recalling, target=21))

    second = _texts(fake_llm.requests[1])
    assert "Kestrel" in second and "Heron" not in second


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"kind": "recall"}, '"query" is missing: give the words to search for'),
        ({"kind": "recall", "query": ""}, "it has no words to search for"),
        ({"kind": "recall", "query": "?!"}, "it has no words to search for"),
        ({"kind": "recall", "query": ["boat"]}, "not text: give the words to search for as a string"),
        ({"kind": "recall", "query": 7}, "not text: give the words to search for as a string"),
    ],
)
def test_a_bad_recall_is_dropped_with_the_fix(task, message):
    parsed = parse_reply(_reply(task, {"kind": "send", "text": "ok"}))

    assert [t.kind for t in parsed.tasks] == ["send"]
    assert len(parsed.errors) == 1 and message in parsed.errors[0]


def test_a_good_recall_keeps_its_query():
    parsed = parse_reply(_reply({"kind": "recall", "query": "  narrowboat Kestrel "}))

    assert [(t.kind, t.params) for t in parsed.tasks] == [("recall", {"query": "narrowboat Kestrel"})]


def test_only_three_recalls_are_searched_per_round_and_the_model_is_told(
    recalling, fake_llm, make_node, clock
):
    words = ["narrowboat", "boat", "canal", "lock"]
    fake_llm.reply_with(_reply(*({"kind": "recall", "query": word} for word in words)))
    fake_llm.reply_with(_reply({"kind": "send", "text": "The Kestrel."}))

    _plan(make_node(recalling, target=21))

    second = _texts(fake_llm.requests[1])
    assert [f'# Recall: "{word}"' in second for word in words] == [True, True, True, False]
    assert "Only 3 recall queries are searched per round; these were skipped: 'lock'" in second


def test_a_two_round_turn_searches_for_its_recalled_section_once(
    agent, dm, settings, fake_llm, make_node, clock
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.CINDY_HISTORY_SIZE = 4
    RolePrompt.objects.create(name="Task-Recall", text="<!-- SCHEMA_TASKS: recall -->\nSearch with recall.")
    agent.role_prompt_names = ["Task-Recall"]
    agent.save()
    add_message(dm, 1, FACT)
    for number in range(2, 21):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)
    add_message(dm, 21, "Which narrowboat did my great-grandfather work on?")
    fake_llm.reply_with(_reply({"kind": "recall", "query": "Kestrel"}))
    fake_llm.reply_with(_reply({"kind": "send", "text": "The Kestrel."}))

    with CaptureQueriesContext(connection) as queries:
        _plan(make_node(dm, target=21))

    first, second = map(_texts, fake_llm.requests)
    assert f"(message 1, Alice wrote): {FACT}" in first  # `# Recalled`, in both rounds
    assert "# Recalled" in second and '# Recall: "Kestrel"' in second
    searches = [q["sql"] for q in queries.captured_queries if "MATCH" in q["sql"].upper()]
    assert len(searches) == 2  # the turn's `# Recalled` once, the `recall` task's words once
