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


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_the_page_shows_every_section_the_prompt_shows(clock, verified, conversation):
    """Memories, notes, plan, intentions, events, curated memories, stickers and the instructions:
    each line the next planning request carries, before and after the history, is on the page."""
    from django.utils.html import escape

    from llm.prompt import TurnContext, build_plan_request
    from llm.prompt.builder import RECENT_ENTRIES_NOTE, RECENT_ENTRIES_TITLE
    from memory.models import Memory
    from memory.services.stored import stored_entry_apply
    from memory.stored_kinds import StoreContext

    agent = conversation.agent
    store = StoreContext(agent_id=agent.pk, channel_id=conversation.peer_id, channel_name="Alice")
    Memory.objects.create(agent=agent, kind="curated", partner_id=77, content="Alice is a night owl")
    before = "2020-01-01 09:00:00 UTC"  # dated before the history: in the system instruction
    stored_entry_apply(
        kind="remember", context=store, entry_id=None, content="Alice has a cat", created=before
    )
    stored_entry_apply(kind="note", context=store, entry_id=None, content="Speaks French", created=before)
    stored_entry_apply(kind="plan", context=store, entry_id=None, content="Ask about the cat", created=before)
    stored_entry_apply(kind="intend", context=store, entry_id=None, content="Be kind", created=before)
    stored_entry_apply(
        kind="event",
        context=store,
        entry_id=None,
        content="Wish her luck",
        params={"time": "2031-05-01 10:00"},
    )
    clock.advance(60)  # after the history's messages: after the history
    stored_entry_apply(kind="remember", context=store, entry_id=None, content="Alice moved to Lyon")

    request = build_plan_request(conversation, TurnContext(trigger="continuation"))
    recent = next(t.parts[0].text for t in request.turns if t.parts[0].text.startswith(RECENT_ENTRIES_TITLE))
    html = verified.client.get(f"/dashboard/conversations/{conversation.pk}/").content.decode()

    for needle in (
        "Alice is a night owl",
        "Alice has a cat",
        "Speaks French",
        "Ask about the cat",
        "Be kind",
    ):
        assert needle in request.system  # what the agent sees...
        assert needle in html  # ...the operator sees
    assert "Wish her luck" in html and "Alice moved to Lyon" in html
    for line in _lines(request.system):
        assert escape(line) in html, f"the page leaves out a line of the system instruction: {line!r}"
    for line in _lines(recent.removeprefix(RECENT_ENTRIES_TITLE).replace(RECENT_ENTRIES_NOTE, "")):
        assert escape(line) in html, f"the page leaves out a line stored since the history began: {line!r}"
    assert (
        html.index("Alice has a cat") < html.index('data-message-id="1"') < html.index("Alice moved to Lyon")
    )
    assert escape("# Instructions For This Turn") in html and "# Current Time" in html


def test_a_voice_note_shows_its_transcript_and_a_correction_wins(verified, sandbox_agent):
    from django.utils.html import escape

    from media_catalog.services.curation import media_description_curate

    conversation = Conversation.objects.create(agent=sandbox_agent, peer_id=78, kind="dm", title="Ada")
    part = {"kind": "media", "media_kind": "voice", "unique_id": "V1", "mime": "audio/ogg", "duration": 4.0}
    Message.objects.create(
        conversation=conversation, message_id=1, sender_id=78, sender_name="Ada", date=now(), media=[part]
    )
    row = MediaDescription.objects.create(
        unique_id="V1", kind="voice", description="Meet me at the fair.", language="en", duration=4.0
    )
    url = f"/dashboard/conversations/{conversation.pk}/"

    assert escape("‹a voice message from Ada, 4.0 s, in en: “Meet me at the fair.”›") in (
        verified.client.get(url).content.decode()
    )

    media_description_curate(description=row, text="Meet me at the ferry.")
    html = verified.client.get(url).content.decode()
    assert escape("in en: “Meet me at the ferry.”›") in html and "the fair" not in html


@pytest.mark.django_db(transaction=True)  # InnoDB's FULLTEXT index shows committed rows only
def test_the_page_shows_what_the_next_turn_recalls(verified, sandbox_agent, settings):
    settings.CINDY_HISTORY_SIZE = 4
    chat = Conversation.objects.create(agent=sandbox_agent, peer_id=88, kind="dm", title="Ada")
    fact = "My cat Biscuit hides under the bed during thunderstorms"
    for number, text in enumerate(
        [fact, *["fine weather"] * 7, "Is Biscuit still afraid of thunderstorms?"], 1
    ):
        is_agent = number % 2 == 0
        Message.objects.create(
            conversation=chat,
            message_id=number,
            sender_id=None if is_agent else 88,
            sender_name="" if is_agent else "Ada",
            is_agent=is_agent,
            date=now(),
            text=text,
        )

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/").content.decode()

    assert 'data-section="recalled"' in html and "(message 1, Ada wrote): " + fact in html
