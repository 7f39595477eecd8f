"""The per-conversation page shows the history exactly as the agent's prompt renders it."""

from __future__ import annotations

import pytest

from cindy_site.clock import now
from conversations.models import Conversation, Message
from llm.conversation import conversation_history
from media_catalog.models import MediaDescription

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


@pytest.fixture
def conversation(sandbox_agent):
    conversation = Conversation.objects.create(agent=sandbox_agent, peer_id=77, kind="dm", title=HOSTILE)
    MediaDescription.objects.create(
        unique_id="S1",
        kind="sticker",
        sticker_set_name="Gnomes",
        sticker_name="👋",
        description="a gnome waving",
    )
    Message.objects.create(
        conversation=conversation,
        message_id=1,
        sender_id=77,
        sender_name=HOSTILE,
        date=now(),
        text=f"hello {HOSTILE}",
        media=[{"kind": "media", "media_kind": "sticker", "unique_id": "S1", "sticker_set_name": "Gnomes"}],
    )
    Message.objects.create(conversation=conversation, message_id=2, is_agent=True, date=now(), text="hi!")
    return conversation


def test_staff_see_each_message_as_the_prompt_renders_it(verified, conversation):
    html = verified.client.get(f"/dashboard/conversations/{conversation.pk}/").content.decode()
    first, second = conversation_history(conversation)
    header = next(p["text"] for p in first.parts if p["kind"] == "header")
    media = next(p["rendered_text"] for p in first.parts if p["kind"] == "media")
    assert "a gnome waving" in media
    from django.utils.html import escape

    for text in (header, media, "hi!"):
        assert escape(text) in html
    assert HOSTILE not in html and "<script>alert(1)" not in html
    assert escape(HOSTILE) in html


def test_the_page_needs_a_verified_staff_session(client, unverified, conversation):
    assert client.get(f"/dashboard/conversations/{conversation.pk}/").status_code == 302
    assert unverified.client.get(f"/dashboard/conversations/{conversation.pk}/").status_code == 302


def test_an_unknown_conversation_is_not_found(verified):
    assert verified.client.get("/dashboard/conversations/999999/").status_code == 404


def test_the_page_shows_the_summaries_and_where_the_history_starts(verified, conversation):
    from memory.models import Summary

    for number in range(3, 12):
        Message.objects.create(
            conversation=conversation, message_id=number, date=now(), text=f"line {number}"
        )
    Summary.objects.create(
        agent=conversation.agent,
        channel_id=conversation.peer_id,
        entry_id="summary-seen",
        content="They waved at each other.",
        first_message_id=1,
        last_message_id=8,
        created=now(),
    )
    html = verified.client.get(f"/dashboard/conversations/{conversation.pk}/").content.decode()
    assert "They waved at each other." in html and "summary-seen" in html
    assert "The history starts at message #5: the summaries cover up to #8" in html
    assert 'data-message-id="4"' not in html and 'data-message-id="5"' in html

    response = verified.client.post(f"/dashboard/conversations/{conversation.pk}/summarize/", follow=True)
    assert "summarizing 1 chat(s)" in response.content.decode()
