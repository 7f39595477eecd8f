"""Recall inside turns: the `# Recalled` section a planning request carries after its cached prefix."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from conversations.models import Conversation, Message
from llm.conversation import conversation_history
from llm.planning import plan_turn
from llm.prompt import TurnContext, build_plan_request
from llm.recalled import (
    RECALLED_TITLE,
    informative_words,
    recalled_section,
    turn_query,
    words_needed,
)
from llm.tests.conftest import START, add_message
from memory.models import Memory
from recall.build import build_kind

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

FACT = "My cat is called Biscuit and she is afraid of thunderstorms"
BACKLOG = 2000
FILLERS = (
    "the weather was grey again today",
    "ok lol",
    "I baked two loaves of rye this morning",
    "haha thanks",
    "the train was late, as usual",
)


@pytest.fixture
def backlog(agent, dm, settings):
    """Alice's DM with 2,000 messages, the fact at message 3; written with `bulk_create` (no signals)
    and indexed by the recall build, as an import is. The history shows the last 40."""
    settings.CINDY_HISTORY_SIZE = 40
    rows = []
    for number in range(1, BACKLOG + 1):
        is_agent = number % 2 == 0
        text = FACT if number == 3 else FILLERS[number % len(FILLERS)]
        rows.append(
            Message(
                conversation=dm,
                message_id=number,
                sender_id=None if is_agent else 1001,
                sender_name="" if is_agent else "Alice",
                is_agent=is_agent,
                date=START + dt.timedelta(minutes=number),
                text=text,
            )
        )
    Message.objects.bulk_create(rows, batch_size=500)
    build_kind(agent=agent, kind="message")
    return dm


def _ask(conversation, number, text, **turn):
    """A new message from Alice, and the request of the turn that answers it."""
    add_message(conversation, number, text, date=START + dt.timedelta(minutes=number))
    history = conversation_history(conversation)
    context = TurnContext(target_message_id=number, **turn)
    return build_plan_request(
        conversation, context, history=history, recall_query=turn_query(history, context)
    )


def _texts(turns) -> str:
    return "\n".join(part.text for turn in turns for part in turn.parts)


def _recalled(request) -> str:
    found = [p.text for t in request.turns for p in t.parts if p.text.startswith(RECALLED_TITLE)]
    assert len(found) <= 1
    return found[0] if found else ""


def test_a_fact_said_2000_messages_back_is_recalled_after_the_prefix(backlog):
    request = _ask(backlog, BACKLOG + 1, "What was my cat's name again?")

    section = _recalled(request)
    assert FACT in section
    assert "(message 3, Alice wrote)" in section
    history = _texts(request.turns[: request.stable_turns])
    assert "Biscuit" not in history and "Biscuit" not in request.system  # only recall shows it
    index = next(i for i, t in enumerate(request.turns) if t.parts[0].text.startswith(RECALLED_TITLE))
    assert request.stable_turns <= index < len(request.turns) - 1  # after the history, before the final turn


def test_an_unrelated_message_recalls_nothing(backlog):
    request = _ask(backlog, BACKLOG + 1, "Which museum opens on Mondays?")

    assert _recalled(request) == ""


@pytest.mark.parametrize("text", ["ok", "hi", "lol", "haha thanks!", "ok ok lol 👍", "Do you remember?"])
def test_short_or_contentless_messages_pull_no_noise(backlog, text):
    assert informative_words(text) == []
    request = _ask(backlog, BACKLOG + 1, text)

    assert _recalled(request) == ""


def test_a_hit_inside_the_history_window_is_not_repeated(backlog):
    add_message(
        backlog,
        BACKLOG + 1,
        "Biscuit knocked the thunderstorm candle over",
        date=START + dt.timedelta(days=3),
    )
    request = _ask(backlog, BACKLOG + 2, "Is Biscuit still scared of thunderstorms?")

    section = _recalled(request)
    assert FACT in section
    assert "candle" not in section  # message 2001 is in the history
    assert "candle" in _texts(request.turns[: request.stable_turns])


def test_the_section_keeps_to_its_character_budget_and_hit_count(agent, dm, settings):
    settings.CINDY_HISTORY_SIZE = 4
    for number in range(1, 31):
        add_message(dm, number, f"Biscuit the cat chased mouse number {number} around the garden shed")
    for number in range(31, 41):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)

    settings.CINDY_RECALL_AUTO_CHARS = 300
    small = _recalled(_ask(dm, 41, "Did Biscuit catch a mouse?"))
    lines = [line for line in small.splitlines() if line.startswith("- ")]
    assert 1 <= len(lines) and sum(len(line) + 1 for line in lines) <= 300

    settings.CINDY_RECALL_AUTO_CHARS = 10_000
    settings.CINDY_RECALL_AUTO_HITS = 3
    many = _recalled(_ask(dm, 42, "Did Biscuit catch a mouse?"))
    assert len([line for line in many.splitlines() if line.startswith("- ")]) == 3


def test_alice_s_turn_never_shows_bob_s_message(agent, dm, settings):
    settings.CINDY_HISTORY_SIZE = 4
    bob = Conversation.objects.create(agent=agent, peer_id=2002, kind=Conversation.Kind.DM, title="Bob")
    add_message(bob, 1, "My cat Shadow sleeps in the piano", sender="Bob", sender_id=2002)
    add_message(dm, 1, "My cat Biscuit sleeps in the laundry basket")
    for number in range(2, 13):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)

    section = _recalled(_ask(dm, 13, "Where does my cat sleep? In the piano?"))

    assert "Biscuit" in section and "Shadow" not in section and "piano" not in section.split("\n\n", 2)[2]


def test_stored_entries_the_prompt_shows_are_not_repeated_but_those_left_out_are(agent, dm, settings):
    settings.CINDY_HISTORY_SIZE = 4
    for number in range(1, 9):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)
    Memory.objects.create(
        agent=agent, kind="episodic", content="Alice's cat Biscuit is ginger", created=START
    )
    Memory.objects.create(
        agent=agent, kind="episodic", content="Lunch was soup " + "and bread " * 8, created=START
    )

    shown = _ask(dm, 9, "What colour is Biscuit?")
    assert "Alice's cat Biscuit is ginger" in shown.system
    assert _recalled(shown) == ""

    settings.CINDY_STORED_ENTRIES_BUDGET_CHARS = 90  # the newer memory (lunch) fits, the cat one not
    left_out = _ask(dm, 10, "What colour is Biscuit?")
    assert "Alice's cat Biscuit is ginger" not in left_out.system
    assert "(your memory): Alice's cat Biscuit is ginger" in _recalled(left_out)


def test_the_cached_prefix_is_the_same_with_and_without_recall(backlog):
    add_message(backlog, BACKLOG + 1, "What was my cat's name again?", date=START + dt.timedelta(days=3))
    history = conversation_history(backlog)
    context = TurnContext(target_message_id=BACKLOG + 1)
    plain = build_plan_request(backlog, context, history=history)
    recalled = build_plan_request(
        backlog, context, history=history, recall_query=turn_query(history, context)
    )

    assert _recalled(plain) == "" and FACT in _recalled(recalled)
    assert plain.system == recalled.system and plain.stable_turns == recalled.stable_turns
    assert plain.turns[: plain.stable_turns] == recalled.turns[: recalled.stable_turns]
    assert plain.turns[-1] == recalled.turns[-1]


def test_recall_can_be_turned_off(backlog, settings):
    settings.CINDY_RECALL_AUTO = False

    assert _recalled(_ask(backlog, BACKLOG + 1, "What was my cat's name again?")) == ""


def test_the_relevance_line_counts_the_query_s_informative_words():
    assert informative_words("Did Biscuit catch the mice in the gardens?") == [
        "biscuit",
        "catch",
        "mice",
        "garden",
    ]
    assert [words_needed(n, 0.5) for n in (1, 2, 3, 4, 5, 8, 20)] == [1, 1, 2, 2, 2, 2, 2]
    assert [words_needed(n, 1.0) for n in (1, 2, 5)] == [1, 2, 2]


def test_a_hit_with_too_few_of_the_query_s_words_is_left_out(agent, dm, settings):
    settings.CINDY_HISTORY_SIZE = 4
    add_message(dm, 1, "the garden shed needs paint")  # 1 of 4 words
    add_message(dm, 2, "Biscuit caught mice in the garden")  # 3 of 4 words
    for number in range(3, 9):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)

    section = _recalled(_ask(dm, 9, "Did Biscuit catch the mice in the gardens?"))

    assert "Biscuit caught mice in the garden" in section and "shed" not in section


def test_an_xsend_or_event_turn_recalls_with_its_intent(backlog):
    history = conversation_history(backlog)
    xsend = TurnContext(trigger="xsend", xsend_intent="Ask Alice how her cat Biscuit is doing")
    event = TurnContext(trigger="event", event_intent="Check on Biscuit the cat")

    assert turn_query(history, xsend) == ("Ask Alice how her cat Biscuit is doing",)
    for context in (xsend, event):
        request = build_plan_request(
            backlog, context, history=history, recall_query=turn_query(history, context)
        )
        assert FACT in _recalled(request)


def test_the_query_is_the_partner_messages_since_the_agent_last_spoke(agent, dm):
    add_message(dm, 1, "old question about bread")
    add_message(dm, 2, "answer", is_agent=True)
    add_message(dm, 3, "first new one")
    add_message(dm, 4, "second new one")
    history = conversation_history(dm)

    assert turn_query(history, TurnContext(target_message_id=4)) == ("second new one", "first new one")
    assert recalled_section(dm, query=(), history=history, shown="") == ""


def test_a_planning_turn_sends_what_it_recalls(backlog, fake_llm, make_node, clock):
    add_message(backlog, BACKLOG + 1, "What was my cat's name again?", date=START + dt.timedelta(days=3))
    node = make_node(backlog, target=BACKLOG + 1)
    fake_llm.reply_with(json.dumps([{"kind": "send", "text": "Biscuit!"}]))

    plan_turn(node_id=node.pk, sleep=lambda seconds: None)

    contents = fake_llm.requests[0].json["contents"]
    texts = [part.get("text", "") for content in contents for part in content["parts"]]
    assert any(text.startswith(RECALLED_TITLE) and FACT in text for text in texts)
