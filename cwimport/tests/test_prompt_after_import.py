"""After the import, the agent's next turn carries what it knew before the switch."""

from __future__ import annotations

import json

import pytest

from conversations.models import Conversation
from cwimport.services import cw_state_import
from engine.tests.cast import make_agent
from engine.tests.harness import Harness, tasks
from sandbox.services.chats import sandbox_person, sandbox_say

pytestmark = pytest.mark.django_db


def test_the_prompt_carries_old_memories_plan_summary_and_intentions(cw_source, clock, fake_llm):
    wendy = make_agent("Wendy", telegram_user_id=1001)
    partner = sandbox_person(name="You").user_id
    cw_source.insert(
        "memories", id="memory-1", agent_telegram_id=1001, content="Zoë's cat is called Mochi 🐈"
    )
    cw_source.insert(
        "notes", id="note-1", agent_telegram_id=1001, channel_id=partner, content="Prefers tea to coffee"
    )
    cw_source.insert(
        "plans", id="plan-1", agent_telegram_id=1001, channel_id=partner, content="Ask how the exam went"
    )
    cw_source.insert(
        "summaries", id="summary-1", agent_telegram_id=1001, channel_id=partner,
        content="Last week they talked about the café on Rue Oberkampf.", created="2025-02-04 00:00:00",
    )  # fmt: skip
    cw_source.insert("intentions", id="intent-1", agent_telegram_id=1001, content="Send the crêpe recipe")
    report = cw_state_import(mysql_url=cw_source.url, state_dir=None, agent_names=[])
    # five entries, and the group for the role the original seeds (superuser)
    assert report.changed == 6 and report.error_count == 0

    harness = Harness(clock)
    harness.start()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hello again!"}))
    sandbox_say(agent=wendy, text="hi, it's me")
    harness.settle()
    assert Conversation.objects.get(agent=wendy).peer_id == partner
    prompt = json.dumps(fake_llm.requests[0].json, ensure_ascii=False)
    for known in (
        "Zoë's cat is called Mochi 🐈",
        "Prefers tea to coffee",
        "Ask how the exam went",
        "Last week they talked about the café on Rue Oberkampf.",
        "Send the crêpe recipe",
    ):
        assert known in prompt, known
