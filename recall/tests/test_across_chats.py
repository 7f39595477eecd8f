"""The persona's "Recall Across Chats": off, a chat finds only its own and the global entries; `DMs`,
a direct chat finds the agent's other direct chats too, and never a group's; a group never widens."""

from __future__ import annotations

import pytest

from memory.models import Memory, Note
from recall.selectors import reaches_other_dms, recall_search
from recall.tests.conftest import ALICE, BOB, START

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

MODES = ("fulltext", "vectors", "fused")


@pytest.fixture
def chats(wendy, say):
    """Alice's and Bob's DMs and a group, each with a secret about a password; Bob's chat has a note
    and a curated memory too."""
    alice, _ = say(ALICE, "see you at the concert")
    bob, _ = say(BOB, "my bank password is hunter2, keep the secret")
    group, _ = say(
        -1001234, "the group wifi password secret is pelican", chat_kind="group", chat_title="Club"
    )
    Note.objects.create(
        agent=wendy,
        channel_id=BOB,
        entry_id="note-1",
        content="Bob's secret password: hunter2",
        created=START,
    )
    Memory.objects.create(agent=wendy, kind="curated", partner_id=BOB, content="Bob keeps a secret password")
    return alice, bob, group


def _search(alice, mode, **extra):
    return recall_search(
        agent_id=alice.agent_id,
        query="secret password",
        conversation=alice,
        mode=mode,
        other_dms=reaches_other_dms(alice),
        **extra,
    )


@pytest.mark.parametrize("mode", MODES)
def test_off_by_default_alice_s_chat_finds_nothing_of_bob_s_or_the_group_s(wendy, chats, mode):
    alice, _, _ = chats
    assert wendy.recall_across_chats == "off" and not reaches_other_dms(alice)
    assert _search(alice, mode) == []


@pytest.mark.parametrize("mode", MODES)
def test_with_dms_alice_s_chat_finds_bob_s_chat_but_never_the_group(wendy, chats, mode):
    alice, bob, group = chats
    wendy.recall_across_chats = "dms"
    wendy.save()
    alice.refresh_from_db()
    assert reaches_other_dms(alice)

    found = _search(alice, mode)

    assert {hit.kind for hit in found} == {"message", "note", "memory"}
    assert {(hit.peer_id, hit.conversation_id) for hit in found} == {(BOB, bob.pk)}
    assert not any("pelican" in hit.text for hit in found)


def test_a_group_never_reaches_the_dms_whatever_the_setting(wendy, chats):
    _, _, group = chats
    wendy.recall_across_chats = "dms"
    wendy.save()
    group.refresh_from_db()
    assert not reaches_other_dms(group)
    found = recall_search(
        agent_id=wendy.pk, query="secret password", conversation=group, other_dms=reaches_other_dms(group)
    )
    assert [hit.text for hit in found] == ["the group wifi password secret is pelican"]


@pytest.mark.parametrize("mode", MODES)
def test_the_history_bound_limits_only_the_chat_s_own_messages(wendy, say, mode):
    wendy.recall_across_chats = "dms"
    wendy.save()
    alice, _ = say(ALICE, "the secret password of the gym locker is 4512")  # message 1
    say(BOB, "my secret password is hunter2")  # message 2
    say(ALICE, "my secret password changed to 9931")  # message 3: in the history shown
    alice.refresh_from_db()

    found = _search(alice, mode, messages_before=3)

    assert sorted(hit.text for hit in found) == [
        "my secret password is hunter2",
        "the secret password of the gym locker is 4512",
    ]
