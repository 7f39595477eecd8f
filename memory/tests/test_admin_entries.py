"""The admin for summaries, notes and intentions, and the conversation's "Summarize now" action."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from conversations.models import Conversation, Message, TaskGraph
from engine.tests.cast import make_agent
from memory.models import Intention, Note, Summary

pytestmark = pytest.mark.django_db


@pytest.fixture
def dm():
    agent = make_agent()
    return Conversation.objects.create(agent=agent, peer_id=1001, kind=Conversation.Kind.DM, title="Alice")


def test_an_intention_can_be_added_in_the_admin(verified_client, dm):
    url = reverse("admin:memory_intention_add")
    form = {
        "agent": dm.agent_id,
        "kind": "intend",
        "entry_id": "intent-x",
        "content": "Learn to knit",
        "extra": "{}",
    }
    response = verified_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    intention = Intention.objects.get()
    assert (intention.entry_id, intention.content, intention.created is not None) == (
        "intent-x",
        "Learn to knit",
        True,
    )


def test_a_summary_and_a_note_are_added_edited_and_filtered_per_conversation(verified_client, dm):
    add = {
        "agent": dm.agent_id,
        "channel_id": dm.peer_id,
        "entry_id": "summary-a",
        "content": "They met.",
        "first_message_id": 1,
        "last_message_id": 9,
        "first_message_date": "2025-01-01",
        "last_message_date": "2025-01-02",
        "extra": "{}",
    }
    assert verified_client.post(reverse("admin:memory_summary_add"), add).status_code == 302
    summary = Summary.objects.get()
    edit = {**add, "content": "They met twice."}
    assert (
        verified_client.post(reverse("admin:memory_summary_change", args=[summary.pk]), edit).status_code
        == 302
    )
    assert Summary.objects.get().content == "They met twice."
    bad = {**add, "first_message_id": 10}
    response = verified_client.post(reverse("admin:memory_summary_change", args=[summary.pk]), bad)
    assert response.status_code == 200 and "before it starts" in response.content.decode()

    note = {
        "agent": dm.agent_id,
        "channel_id": dm.peer_id,
        "entry_id": "note-a",
        "content": "Likes rye",
        "extra": "{}",
    }
    assert verified_client.post(reverse("admin:memory_note_add"), note).status_code == 302
    Note.objects.create(
        agent=dm.agent, channel_id=555, content="Someone else", created=Summary.objects.get().created
    )
    listing = verified_client.get(
        reverse("admin:memory_note_changelist"), {"agent__id__exact": dm.agent_id, "channel_id": dm.peer_id}
    ).content.decode()
    assert "Likes rye" in listing and "Someone else" not in listing
    page = verified_client.get(
        reverse("admin:conversations_conversation_change", args=[dm.pk])
    ).content.decode()
    assert f"channel_id={dm.peer_id}" in page


def test_summarize_now_starts_a_summarization_turn_over_everything(verified_client, dm, clock):
    for number in range(1, 4):
        Message.objects.create(
            conversation=dm,
            message_id=number,
            date=clock.now() - dt.timedelta(minutes=5 - number),
            text=f"m{number}",
        )
    url = reverse("admin:conversations_conversation_changelist")
    response = verified_client.post(
        url, {"action": "summarize_now", "_selected_action": [dm.pk]}, follow=True
    )
    messages = [str(m) for m in response.context["messages"]]
    assert any("summarizing 1 chat(s)" in m for m in messages), messages
    graph = TaskGraph.objects.get(conversation=dm)
    assert graph.trigger == TaskGraph.Trigger.SUMMARIZE and graph.context["summarize"]["everything"] is True
    response = verified_client.post(
        url, {"action": "summarize_now", "_selected_action": [dm.pk]}, follow=True
    )
    assert any("a turn is in progress" in str(m) for m in response.context["messages"])
