"""The cast for LLM-layer tests: an agent, a DM partner, a group, and a way to add messages."""

from __future__ import annotations

import datetime as dt

import pytest

from agents.models import Agent
from conversations.models import Conversation, Message, TaskGraph, TaskNode
from llm.tests.local_site import retriever, site  # noqa: F401 - fixtures

START = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def agent(db):
    return Agent.objects.create(
        name="Wendy",
        phone="+15550000001",
        instructions="You are Wendy, a cheerful baker. Talk to {user} warmly.",
        timezone="Europe/Paris",
        role_prompt_names=["Chatbot"],
    )


@pytest.fixture
def dm(agent):
    return Conversation.objects.create(
        agent=agent, peer_id=1001, kind=Conversation.Kind.DM, title="Alice", username="alice"
    )


@pytest.fixture
def group(agent):
    return Conversation.objects.create(
        agent=agent,
        peer_id=-2002,
        kind=Conversation.Kind.GROUP,
        title="Bakers",
        details={"participants": ["Alice", "Bob", "Wendy"], "participants_count": 3},
    )


def add_message(
    conversation, message_id, text="", *, sender="Alice", sender_id=1001, is_agent=False, **extra
):
    return Message.objects.create(
        conversation=conversation,
        message_id=message_id,
        sender_id=None if is_agent else sender_id,
        sender_name="" if is_agent else sender,
        is_agent=is_agent,
        date=extra.pop("date", START + dt.timedelta(minutes=message_id)),
        text=text,
        **extra,
    )


@pytest.fixture
def say():
    return add_message


def received_node(conversation, *, trigger="message", target=None, context=None):
    graph = TaskGraph.objects.create(
        conversation=conversation,
        trigger=trigger,
        target_message_id=target,
        context=context or {},
        created=START,
        active_slot=conversation.pk,
    )
    return TaskNode.objects.create(
        graph=graph,
        conversation=conversation,
        agent=conversation.agent,
        kind="received",
        not_before=START,
        created=START,
    )


@pytest.fixture
def make_node():
    return received_node
