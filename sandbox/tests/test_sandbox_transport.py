from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from conversations.transport.base import (
    MessagesDeleted,
    NewMessage,
    PermanentError,
    ReactionsChanged,
    StickerRef,
    Transport,
)
from engine.transports import transport_for
from sandbox.models import SandboxMessage
from sandbox.services.chats import (
    sandbox_chat_for,
    sandbox_person,
    sandbox_react,
    sandbox_say,
    sandbox_transcript,
    sandbox_user_for_agent,
)
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db


def connected(agent) -> SandboxTransport:
    transport = transport_for(agent)
    async_to_sync(transport.connect)()
    return transport


def test_factory_gives_sandbox_agents_the_sandbox_transport(agent):
    transport = transport_for(agent, gateway_id="gw")
    assert isinstance(transport, SandboxTransport)
    assert isinstance(transport, Transport)


def test_a_repeated_random_id_returns_the_earlier_message_and_creates_nothing(agent, clock):
    transport = connected(agent)
    you = sandbox_person(name="You")
    first = async_to_sync(transport.send_text)(you.user_id, "hi", random_id=42)
    again = async_to_sync(transport.send_text)(you.user_id, "hi", random_id=42)
    assert again.message_id == first.message_id
    assert SandboxMessage.objects.filter(sender__agent=agent).count() == 1


def test_poll_updates_delivers_new_messages_after_the_cursor(agent, clock):
    transport = connected(agent)
    sandbox_say(agent=agent, text="hello")
    sandbox_say(agent=agent, text="are you there?")
    updates = async_to_sync(transport.poll_updates)()
    assert [u.message.text for u in updates] == ["hello", "are you there?"]
    assert all(isinstance(u, NewMessage) and u.message.chat_kind == "dm" for u in updates)
    assert async_to_sync(transport.poll_updates)() == []


def test_history_since_an_id_fills_a_gap(agent, clock):
    for text in ["one", "two", "three"]:
        sandbox_say(agent=agent, text=text)
    transport = connected(agent)
    assert async_to_sync(transport.poll_updates)() == []  # the cursor starts at the end of the log
    you = sandbox_person(name="You")
    missed = async_to_sync(transport.history)(you.user_id, since_id=1)
    assert [m.text for m in missed] == ["two", "three"]


def test_group_mentions_and_replies_to_the_agent_are_flagged(agent, clock):
    transport = connected(agent)
    me = sandbox_user_for_agent(agent=agent)
    chat = sandbox_chat_for(agent=agent, as_name="Alice", group="Book club")
    sandbox_say(agent=agent, text="chatter", as_name="Alice", group="Book club")
    sent = async_to_sync(transport.send_text)(chat.peer_id, "I am here", random_id=7)
    sandbox_say(agent=agent, text=f"hey @{me.username} what now?", as_name="Alice", group="Book club")
    sandbox_say(agent=agent, text="agreed", as_name="Bob", group="Book club", reply_to=sent.message_id)
    updates = [u.message for u in async_to_sync(transport.poll_updates)()]
    flags = [(m.text, m.mentions_agent, m.reply_to_agent, m.is_outgoing) for m in updates]
    assert flags == [
        ("chatter", False, False, False),
        ("I am here", False, False, True),
        (f"hey @{me.username} what now?", True, False, False),
        ("agreed", False, True, False),
    ]
    assert all(m.peer_id == chat.peer_id and m.chat_kind == "group" for m in updates)


def test_a_reaction_on_the_agents_message_is_an_unread_reaction_until_read(agent, clock):
    transport = connected(agent)
    you = sandbox_person(name="You")
    sent = async_to_sync(transport.send_text)(you.user_id, "how was it?", random_id=1)
    async_to_sync(transport.poll_updates)()
    sandbox_react(agent=agent, message_id=sent.message_id, emoji="👍")
    (update,) = async_to_sync(transport.poll_updates)()
    assert isinstance(update, ReactionsChanged) and update.unread
    assert update.reactions[0].emoji == "👍" and update.reactions[0].user_ids == (you.user_id,)
    async_to_sync(transport.mark_read)(you.user_id, sent.message_id)
    message = SandboxMessage.objects.get(sender__agent=agent)
    assert message.reactions[0]["unread"] is False


def test_sending_to_someone_who_blocked_the_agent_is_a_permanent_error(agent, clock):
    transport = connected(agent)
    you = sandbox_person(name="You")
    you.blocked_user_ids = [sandbox_user_for_agent(agent=agent).user_id]
    you.save()
    with pytest.raises(PermanentError) as excinfo:
        async_to_sync(transport.send_text)(you.user_id, "hello?", random_id=5)
    assert excinfo.value.reason == "USER_IS_BLOCKED"


def test_block_unblock_and_delete_history(agent, clock):
    transport = connected(agent)
    you = sandbox_person(name="You")
    sandbox_say(agent=agent, text="spam")
    async_to_sync(transport.block)(you.user_id)
    assert async_to_sync(transport.is_blocked)(you.user_id)
    async_to_sync(transport.unblock)(you.user_id)
    assert not async_to_sync(transport.is_blocked)(you.user_id)
    async_to_sync(transport.poll_updates)()
    async_to_sync(transport.delete_history)(you.user_id)
    (update,) = async_to_sync(transport.poll_updates)()
    assert isinstance(update, MessagesDeleted) and update.message_ids == (1,)
    assert async_to_sync(transport.history)(you.user_id) == []


def test_transcript_shows_stickers_replies_and_reactions_in_words(agent, clock):
    transport = connected(agent)
    you = sandbox_person(name="You")
    sandbox_say(agent=agent, text="hello")
    sticker = StickerRef(set_short_name="WendyDancer", name="😉", unique_id="u1")
    async_to_sync(transport.send_sticker)(you.user_id, sticker, random_id=9, reply_to=1)
    sandbox_react(agent=agent, message_id=2, emoji="❤")
    assert sandbox_transcript(agent=agent) == [
        "You: hello",
        "Wendy: (in reply to #1) (sticker 😉 from WendyDancer) (reactions: ❤ from You)",
    ]


def test_sandbox_command_says_reacts_and_shows(agent, clock, capsys):
    call_command("sandbox", "say", "Wendy", "hi", "second", "--as", "Alice")
    call_command("sandbox", "react", "Wendy", "1", "🔥", "--as", "Alice")
    capsys.readouterr()
    call_command("sandbox", "show", "Wendy", "--as", "Alice")
    assert capsys.readouterr().out.splitlines() == ["Alice: hi (reactions: 🔥 from Alice)", "Alice: second"]


def test_a_dm_is_titled_after_the_other_person_even_in_the_agents_own_messages(agent, clock):
    transport = connected(agent)
    dora = sandbox_person(name="Dora")
    sandbox_say(agent=agent, text="hi", as_name="Dora")
    async_to_sync(transport.send_text)(dora.user_id, "hello Dora", random_id=7)
    records = async_to_sync(transport.history)(dora.user_id)
    assert [(r.text, r.chat_title) for r in records] == [("hi", "Dora"), ("hello Dora", "Dora")]


def test_an_update_committed_late_with_a_lower_id_is_still_delivered_once(agent, clock):
    from sandbox.models import SandboxUpdate

    transport = connected(agent)
    first = sandbox_say(agent=agent, text="first", as_name="Alice")
    second = sandbox_say(agent=agent, text="second", as_name="Alice")
    late = SandboxUpdate.objects.get(message_id=first.message_id, kind="new_message")
    late_fields = {"id": late.id, "chat_id": late.chat_id, "kind": late.kind, "actor_id": late.actor_id}
    late.delete()  # not committed yet when the poll runs: only the higher id is visible

    polled = async_to_sync(transport.poll_updates)()
    assert [u.message.text for u in polled] == ["second"]

    clock.advance(60)  # well past the time window: the id window alone must catch it
    SandboxUpdate.objects.create(message_id=first.message_id, created=clock.now(), **late_fields)
    polled = async_to_sync(transport.poll_updates)()
    assert [u.message.text for u in polled] == ["first"]
    assert async_to_sync(transport.poll_updates)() == []
    assert second.message_id > first.message_id


def test_the_poll_remembers_only_ids_inside_its_window(agent, clock, monkeypatch):
    from sandbox.transport import updates as sandbox_module

    monkeypatch.setattr(sandbox_module, "TRAILING_IDS", 2)
    transport = connected(agent)
    for n in range(6):
        sandbox_say(agent=agent, text=f"m{n}", as_name="Alice")
        clock.advance(30)
        async_to_sync(transport.poll_updates)()
    assert len(transport.seen) <= 2
    assert async_to_sync(transport.poll_updates)() == []


def test_show_creates_nothing_and_the_command_says_no_messages(agent, clock, capsys):
    from sandbox.models import SandboxChat, SandboxUser

    assert sandbox_transcript(agent=agent, as_name="Nobody") == []
    assert sandbox_transcript(agent=agent, as_name="Nobody", group="No such group") == []
    call_command("sandbox", "show", "Wendy", "--as", "Stranger")
    assert capsys.readouterr().out.strip() == "no messages"
    assert not SandboxUser.objects.exists() and not SandboxChat.objects.exists()


def test_a_sticker_set_named_by_curated_descriptions_is_known_to_the_sandbox(agent, clock):
    from media_catalog.models import MediaDescription

    for unique_id, emoji in (("G1", "👋"), ("G2", "🍄")):
        MediaDescription.objects.create(
            unique_id=unique_id,
            kind="sticker",
            sticker_set_name="BrambleGnome",
            sticker_set_title="Bramble the Gnome",
            sticker_name=emoji,
            description="a gnome",
            source="curated",
            status="curated",
        )
    transport = connected(agent)
    found = async_to_sync(transport.resolve_sticker_set)("BrambleGnome")
    assert found.title == "Bramble the Gnome"
    assert [(s.name, s.unique_id) for s in found.stickers] == [("👋", "G1"), ("🍄", "G2")]
    with pytest.raises(PermanentError, match="knows no sticker set 'Nope'"):
        async_to_sync(transport.resolve_sticker_set)("Nope")


def test_with_updates_names_exactly_the_transports_whose_poll_finds_something(agent, clock):
    from agents.models import Agent

    other = Agent.objects.create(name="Other", phone="+15550000001", transport="sandbox")
    mine, theirs = connected(agent), connected(other)
    assert SandboxTransport.with_updates([mine, theirs]) == set()

    sandbox_say(agent=agent, text="hello")
    assert SandboxTransport.with_updates([mine, theirs]) == {mine}

    assert [u.message.text for u in async_to_sync(mine.poll_updates)()] == ["hello"]
    assert SandboxTransport.with_updates([mine, theirs]) == set()


def test_with_updates_names_a_transport_with_a_late_row_in_its_window_and_not_for_its_own_typing(
    agent, clock
):
    from sandbox.models import SandboxUpdate

    mine = connected(agent)
    chat = sandbox_say(agent=agent, text="one").chat
    sandbox_say(agent=agent, text="two")
    assert len(async_to_sync(mine.poll_updates)()) == 2
    assert SandboxTransport.with_updates([mine]) == set()

    first = min(mine.seen)
    del mine.seen[first]  # as if it had committed after the second (MariaDB): below the cursor, unseen
    assert SandboxTransport.with_updates([mine]) == {mine}
    mine.seen[first] = clock.now()

    SandboxUpdate.objects.create(
        chat=chat, kind=SandboxUpdate.Kind.TYPING, message_id=0, actor=mine.me, created=clock.now()
    )
    assert SandboxTransport.with_updates([mine]) == set()  # one's own typing is nobody's update
