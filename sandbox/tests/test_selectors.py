"""The sandbox's plain-SQL reads of the update log, and the reads the sandbox page and API share."""

from __future__ import annotations

import datetime as dt

import pytest

from engine.tests.cast import make_agent
from sandbox.models import SandboxChat, SandboxMember, SandboxMessage, SandboxUpdate, SandboxUser
from sandbox.selectors import (
    sandbox_chat_messages,
    sandbox_members_among,
    sandbox_message_row,
    sandbox_own_reactions,
    sandbox_poll_update_ids,
    sandbox_update_window,
    sandbox_update_window_stamp,
)
from sandbox.services.chats import sandbox_chat_for, sandbox_say

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
OLD = NOW - dt.timedelta(hours=1)
RECENT = NOW - dt.timedelta(seconds=10)


@pytest.fixture
def log() -> dict[str, object]:
    """Me and Ann in a DM and a group; Bob alone in a chat of his own; updates of every kind."""
    me = SandboxUser.objects.create(user_id=1, name="Me")
    ann = SandboxUser.objects.create(user_id=2, name="Ann")
    bob = SandboxUser.objects.create(user_id=3, name="Bob")
    dm = SandboxChat.objects.create(kind="dm", peer_id=10)
    group = SandboxChat.objects.create(kind="group", peer_id=-20, title="Club")
    elsewhere = SandboxChat.objects.create(kind="group", peer_id=-30, title="Bob's")
    for chat, users in ((dm, [me, ann]), (group, [me, ann]), (elsewhere, [bob])):
        for user in users:
            SandboxMember.objects.create(chat=chat, user=user)

    def update(chat: SandboxChat, kind: str, actor: SandboxUser | None, created: dt.datetime) -> int:
        return SandboxUpdate.objects.create(
            chat=chat, kind=kind, actor=actor, message_id=1, created=created
        ).id

    return {
        "me": me,
        "ann": ann,
        "bob": bob,
        "dm": dm,
        "group": group,
        "old_message": update(dm, "new_message", ann, OLD),
        "my_typing": update(dm, "typing", me, NOW),
        "ann_typing": update(dm, "typing", ann, NOW),
        "ann_unread_mark": update(group, "unread_mark", ann, NOW),
        "my_unread_mark": update(group, "unread_mark", me, NOW),
        "system_typing": update(group, "typing", None, NOW),
        "elsewhere": update(elsewhere, "new_message", bob, NOW),
        "group_message": update(group, "new_message", ann, NOW),
    }


def test_the_poll_read_finds_the_accounts_updates_in_its_window_oldest_first(log):
    me = log["me"]
    ids = sandbox_poll_update_ids(user_id=me.pk, floor=log["old_message"], recent=RECENT, limit=100)
    # Not its own typing, not Ann's unread mark, nothing of a chat it is not in, nothing before the window.
    assert ids == [log["ann_typing"], log["my_unread_mark"], log["system_typing"], log["group_message"]]


def test_the_poll_read_keeps_old_rows_above_the_floor_and_stops_at_its_limit(log):
    me = log["me"]
    ids = sandbox_poll_update_ids(user_id=me.pk, floor=0, recent=NOW + dt.timedelta(days=1), limit=2)
    assert ids == [log["old_message"], log["ann_typing"]]


def test_the_window_stamp_changes_with_a_row_committed_late_below_the_newest_id(log):
    floor = log["old_message"]
    count, newest = sandbox_update_window_stamp(floor=floor, recent=RECENT)
    assert (count, newest) == (7, log["group_message"])
    # An old row within the time window (as a late commit with a lower id would be) moves the count.
    SandboxUpdate.objects.filter(id=log["old_message"]).update(created=NOW)
    assert sandbox_update_window_stamp(floor=floor, recent=RECENT) == (8, log["group_message"])


def test_the_window_names_each_rows_chat_kind_actor_and_whether_it_is_recent(log):
    rows = sandbox_update_window(floor=0, recent=RECENT)
    by_id = {row[0]: row for row in rows}
    assert by_id[log["old_message"]] == (
        log["old_message"],
        log["dm"].pk,
        "new_message",
        log["ann"].pk,
        False,
    )
    assert by_id[log["system_typing"]] == (log["system_typing"], log["group"].pk, "typing", None, True)
    assert len(rows) == 8


def test_the_members_read_pairs_only_the_asked_accounts_with_the_asked_chats(log):
    me, ann, bob = log["me"], log["ann"], log["bob"]
    pairs = sandbox_members_among(chat_ids=[log["dm"].pk, log["group"].pk], user_ids=[me.pk, bob.pk])
    assert sorted(pairs) == sorted([(log["dm"].pk, me.pk), (log["group"].pk, me.pk)])
    assert sandbox_members_among(chat_ids=[], user_ids=[ann.pk]) == []


def test_the_own_reactions_read_keeps_the_senders_messages_with_reactions_up_to_the_mark(log):
    me, ann, dm, group = log["me"], log["ann"], log["dm"], log["group"]
    thumbs = [{"emoji": "👍", "user_ids": [ann.user_id], "unread": True}]

    def message(chat: SandboxChat, sender: SandboxUser, message_id: int, reactions: list) -> int:
        return SandboxMessage.objects.create(
            chat=chat, sender=sender, message_id=message_id, date=NOW, text="hi", reactions=reactions
        ).pk

    mine = message(dm, me, 1, thumbs)
    message(dm, me, 2, [])  # no reactions
    message(dm, ann, 3, thumbs)  # not the account's own
    message(dm, me, 9, thumbs)  # above the mark
    in_group = message(group, me, 4, thumbs)
    found = sandbox_own_reactions(chat_ids=[dm.pk, group.pk], sender_ids=[me.pk], up_to=5)
    assert found == [(mine, dm.pk, me.pk, 1, thumbs), (in_group, group.pk, me.pk, 4, thumbs)]
    assert sandbox_own_reactions(chat_ids=[dm.pk], sender_ids=[], up_to=5) == []


def test_the_api_and_the_page_show_a_chats_messages_oldest_first_without_media():
    agent = make_agent()
    sandbox_say(agent=agent, text="one")
    sandbox_say(agent=agent, text="two")
    rows = [sandbox_message_row(m) for m in sandbox_chat_messages(chat=sandbox_chat_for(agent=agent))]
    assert [(row["text"], row["sender"], row["from_agent"]) for row in rows] == [
        ("one", "You", False),
        ("two", "You", False),
    ]
    assert "media" not in rows[0]
    assert list(sandbox_chat_messages(chat=None)) == []
