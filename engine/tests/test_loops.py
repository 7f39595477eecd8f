"""Two agents (or an agent and a bot) in one group stop answering each other after the hop limit."""

from __future__ import annotations

import json

import pytest

from conversations.models import ActivityEvent, TaskGraph
from engine.tests.harness import Harness
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_group, sandbox_post, sandbox_say, sandbox_user_for_agent

pytestmark = pytest.mark.django_db

GROUP = "Lounge"
BANTER = "@Wendy @Heidi what do you two think?"  # every reply calls out both agents


@pytest.fixture
def lounge(agent, other_agent, clock, fake_llm, settings):
    settings.CINDY_AGENT_HOP_LIMIT = 3
    settings.CINDY_AGENT_HOP_COOLDOWN_SECONDS = 600
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": BANTER}]))
    sandbox_group(
        title=GROUP, members=[sandbox_user_for_agent(agent=agent), sandbox_user_for_agent(agent=other_agent)]
    )
    harness = Harness(clock)
    harness.start()
    return harness


def _agent_messages_after(message_id: int) -> list[str]:
    rows = SandboxMessage.objects.filter(chat__title=GROUP, message_id__gt=message_id).order_by("message_id")
    return [m.sender.name for m in rows if m.sender.agent_id is not None]


def test_two_agents_stop_answering_each_other_after_the_hop_limit(agent, other_agent, lounge, fake_llm):
    question = sandbox_say(agent=agent, text="@Wendy how was your day?", as_name="Ann", group=GROUP)
    lounge.settle()

    # Wendy answers Ann, then each agent answers the other while the run is at most 3 long.
    assert _agent_messages_after(question.message_id) == ["Wendy", "Heidi", "Wendy", "Heidi"]
    assert len(fake_llm.requests) == 4
    (stop,) = ActivityEvent.objects.filter(kind=ActivityEvent.Kind.LOOP_GUARD)
    assert stop.agent == agent and stop.conversation.title == GROUP
    assert "more than 3 messages in a row from agents or bots" in stop.summary


def test_a_person_writing_starts_a_new_run(agent, other_agent, lounge, fake_llm):
    sandbox_say(agent=agent, text="@Wendy how was your day?", as_name="Ann", group=GROUP)
    lounge.settle()
    again = sandbox_say(agent=agent, text="@Heidi and yours?", as_name="Ann", group=GROUP)
    lounge.settle()

    assert _agent_messages_after(again.message_id) == ["Heidi", "Wendy", "Heidi", "Wendy"]
    assert ActivityEvent.objects.filter(kind=ActivityEvent.Kind.LOOP_GUARD).count() == 2


def test_after_the_cool_down_an_agents_message_is_answered_again(agent, other_agent, lounge, clock, fake_llm):
    sandbox_say(agent=agent, text="@Wendy how was your day?", as_name="Ann", group=GROUP)
    lounge.settle()
    graphs = TaskGraph.objects.count()

    chat = sandbox_group(title=GROUP, members=[])
    heidi = sandbox_user_for_agent(agent=other_agent)
    clock.advance(300)
    sandbox_post(chat=chat, sender=heidi, text="@Wendy still there?")
    lounge.settle()
    assert TaskGraph.objects.count() == graphs  # within the cool-down: still the same run

    clock.advance(minutes=11)
    later, _ = sandbox_post(chat=chat, sender=heidi, text="@Wendy good morning!")
    lounge.settle()
    assert _agent_messages_after(later.message_id)[:2] == ["Wendy", "Heidi"]


def test_the_agents_own_hop_limit_beats_the_setting(agent, other_agent, lounge, fake_llm):
    agent.hop_limit = 0  # Wendy never answers another agent or a bot
    agent.save()
    question = sandbox_say(agent=agent, text="@Wendy how was your day?", as_name="Ann", group=GROUP)
    lounge.settle()

    assert _agent_messages_after(question.message_id) == ["Wendy", "Heidi"]


def test_a_bot_counts_as_a_machine_too(agent, lounge, fake_llm):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "pong"}]))
    agent.answer_bots = True
    agent.hop_limit = 2
    agent.save()
    for number in range(3):
        sandbox_say(agent=agent, text=f"@Wendy ping {number}", as_name="PingBot", bot=True, group=GROUP)
        lounge.settle()

    # ping 0 is a run of 1; after Wendy's pong, ping 1 makes a run of 3, and ping 2 one of 4.
    assert _agent_messages_after(0) == ["Wendy"]
    assert ActivityEvent.objects.filter(kind=ActivityEvent.Kind.LOOP_GUARD).count() == 2
