"""Recall across chats inside turns: with the persona's "Recall Across Chats" at `DMs`, the `# Recalled`
section and a `recall` task of a DM show the agent's other DMs, each hit naming its chat; off, never."""

from __future__ import annotations

import json

import pytest

from agents.models import RolePrompt
from conversations.models import Conversation
from llm.conversation import conversation_history
from llm.planning import plan_turn
from llm.prompt import TurnContext, build_plan_request
from llm.recalled import OTHER_CHATS_NOTE, RECALLED_TITLE, turn_query
from llm.tests.conftest import add_message

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

BOB_SAID = "My cat Shadow sleeps in the piano every afternoon"


@pytest.fixture
def chats(agent, dm, group, settings):
    """Bob told Wendy about his cat in his DM, the bakers' group about theirs; Alice's DM has a history
    of 4 messages and no word about cats."""
    settings.CINDY_HISTORY_SIZE = 4
    bob = Conversation.objects.create(agent=agent, peer_id=2002, kind=Conversation.Kind.DM, title="Bob")
    add_message(bob, 1, BOB_SAID, sender="Bob", sender_id=2002)
    add_message(
        group, 1, "The bakery cat sleeps in the flour sacks, by the piano", sender="Carol", sender_id=3003
    )
    for number in range(1, 9):
        add_message(dm, number, "fine weather", is_agent=number % 2 == 0)
    return dm


def _recalled(conversation, number, text) -> str:
    add_message(conversation, number, text)
    history = conversation_history(conversation)
    context = TurnContext(target_message_id=number)
    request = build_plan_request(
        conversation, context, history=history, recall_query=turn_query(history, context)
    )
    found = [p.text for t in request.turns for p in t.parts if p.text.startswith(RECALLED_TITLE)]
    return found[0] if found else ""


def test_off_alice_s_turn_shows_nothing_of_bob_s_chat(agent, chats):
    assert agent.recall_across_chats == "off"
    assert _recalled(chats, 9, "Where does your cat sleep? In the piano?") == ""


def test_with_dms_alice_s_turn_shows_bob_s_message_named_as_his_chat_and_never_the_group_s(agent, chats):
    agent.recall_across_chats = "dms"
    agent.save()

    section = _recalled(chats, 9, "Where does a cat sleep? In the piano?")

    assert f"(message 1, Bob wrote, from your chat with Bob): {BOB_SAID}" in section
    assert OTHER_CHATS_NOTE in section
    assert "flour" not in section


def test_with_dms_a_recall_task_shows_bob_s_message_named_as_his_chat(
    agent, chats, fake_llm, make_node, clock
):
    agent.recall_across_chats = "dms"
    agent.role_prompt_names = ["Task-Recall"]
    agent.save()
    RolePrompt.objects.create(name="Task-Recall", text="<!-- SCHEMA_TASKS: recall -->\nSearch with recall.")
    add_message(chats, 9, "What do you know about pianos?")
    fake_llm.reply_with(json.dumps([{"kind": "recall", "query": "Shadow piano"}]))
    fake_llm.reply_with(json.dumps([{"kind": "send", "text": "Not much."}]))

    plan_turn(node_id=make_node(chats, target=9).pk, sleep=lambda seconds: None)

    second = "\n".join(
        part.get("text", "") for content in fake_llm.requests[1].json["contents"] for part in content["parts"]
    )
    assert "your memory of this conversation and your other direct chats" in second
    assert f"(message 1, Bob wrote, from your chat with Bob): {BOB_SAID}" in second
    assert "flour sacks" not in second
