"""Forum topics: each topic of a group is a conversation of its own (history, triggers, replies, plans
and summaries), on the group's peer; the sandbox plays Telegram's forum."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from conversations.models import Conversation
from conversations.services.ingest import conversation_upsert
from engine.tests.harness import Harness
from memory.models import Summary
from memory.services.stored import stored_entry_apply
from memory.services.summaries import summary_covered_id
from memory.stored_kinds import StoreContext
from sandbox.models import SandboxMessage, SandboxTopic
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def _prompts(fake_llm) -> list[str]:
    return [json.dumps(r.json, ensure_ascii=False) for r in fake_llm.requests]


def test_a_callout_in_a_topic_is_answered_in_that_topic_with_that_topics_history(agent, clock, fake_llm):
    harness = Harness(clock)
    harness.start()
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "Beans first."}]))
    handle = f"@{agent.name.lower()}"

    sandbox_say(agent=agent, text="who has the long spade?", as_name="Ben", group="Allotment", topic="Tools")
    sandbox_say(agent=agent, text="broad beans go in now", as_name="Ada", group="Allotment", topic="Seeds")
    sandbox_say(agent=agent, text="morning all", as_name="Ada", group="Allotment")
    harness.settle()
    assert fake_llm.requests == []  # no callout, no turn: not in a topic, not in General

    sandbox_say(agent=agent, text=f"{handle} beans or peas?", as_name="Ada", group="Allotment", topic="Seeds")
    harness.settle()

    seeds = SandboxTopic.objects.get(title="Seeds")
    tools = SandboxTopic.objects.get(title="Tools")
    conversations = {
        c.topic_title: c for c in Conversation.objects.filter(agent=agent, peer_id=seeds.chat.peer_id)
    }
    assert set(conversations) == {"", "Seeds", "Tools"}
    assert (conversations["Seeds"].topic_id, conversations["Tools"].topic_id) == (
        seeds.topic_id,
        tools.topic_id,
    )
    assert conversations["Seeds"].display_title == "Allotment › Seeds"
    [prompt] = _prompts(fake_llm)
    assert "broad beans go in now" in prompt and "- Topic: Seeds" in prompt
    assert "long spade" not in prompt and "morning all" not in prompt
    [reply] = SandboxMessage.objects.filter(sender__agent=agent)
    assert (reply.text, reply.topic_id) == ("Beans first.", seeds.topic_id)
    assert list(conversations["Seeds"].graphs.values_list("trigger", flat=True)) == ["message"]
    assert not conversations["Tools"].graphs.exists() and not conversations[""].graphs.exists()


def test_a_new_topic_conversation_takes_the_groups_settings(agent):
    group = conversation_upsert(agent=agent, peer_id=-5005, kind="group", title="Allotment")
    Conversation.objects.filter(pk=group.pk).update(muted=True, gagged=True, details={"about": "veg"})

    topic = conversation_upsert(
        agent=agent, peer_id=-5005, kind="group", title="Allotment", topic_id=7, topic_title="Seeds"
    )

    assert topic.pk != group.pk
    assert (topic.muted, topic.gagged, topic.details, topic.topic_title) == (
        True,
        True,
        {"about": "veg"},
        "Seeds",
    )
    assert conversation_upsert(agent=agent, peer_id=-5005, kind="group", topic_id=7).pk == topic.pk


def test_a_topics_summaries_cover_only_that_topic(agent, clock):
    def summarize(topic_id: int, last: int) -> None:
        stored_entry_apply(
            kind="summarize",
            context=StoreContext(agent_id=agent.pk, channel_id=-5005, topic_id=topic_id),
            entry_id=None,
            content="so far",
            params={"min_message_id": 1, "max_message_id": last},
        )

    summarize(7, 40)
    summarize(0, 12)

    assert summary_covered_id(agent_id=agent.pk, channel_id=-5005, topic_id=7) == 40
    assert summary_covered_id(agent_id=agent.pk, channel_id=-5005) == 12
    assert Summary.objects.filter(topic_id=9).count() == 0


def test_the_sandbox_command_writes_in_a_topic_and_shows_it(agent, capsys):
    call_command(
        "sandbox", "say", agent.name, "hello seeds", "--as", "Ada", "--group", "Plot", "--topic", "Seeds"
    )
    call_command("sandbox", "say", agent.name, "hello all", "--as", "Ada", "--group", "Plot")
    call_command("sandbox", "show", agent.name, "--as", "Ada", "--group", "Plot")
    call_command("sandbox", "show", agent.name, "--as", "Ada", "--group", "Plot", "--topic", "Seeds")

    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == ["[Seeds] Ada: hello seeds", "Ada: hello all", "Ada: hello seeds"]
    assert SandboxTopic.objects.get(title="Seeds").chat.forum is True


def test_a_topic_without_a_group_is_refused_with_the_fix(agent):
    with pytest.raises(CommandError, match="--topic 'Seeds' needs --group TITLE"):
        call_command("sandbox", "say", agent.name, "hi", "--topic", "Seeds")
