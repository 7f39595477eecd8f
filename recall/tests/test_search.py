"""Searching the recall index: stemming, ranking, scope and the errors of a bad query."""

from __future__ import annotations

import pytest

from conversations.services.ingest import conversation_clear_mirror, messages_mark_deleted
from memory.models import Memory, Note
from recall.models import RecallEntry
from recall.selectors import MAX_LIMIT, RecallQueryError, recall_search
from recall.tests.conftest import ALICE, BOB, START

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)


def _texts(hits):
    return [hit.text for hit in hits]


def test_a_plural_finds_the_singular_and_other_forms_of_the_word(wendy, say):
    chat, _ = say(ALICE, "My sister's wedding is in June")
    say(ALICE, "We were married in a small chapel")
    say(ALICE, "Nothing to do with it")

    hits = recall_search(agent_id=wendy.pk, query="weddings", conversation=chat, mode="fulltext")

    assert _texts(hits) == ["My sister's wedding is in June"]
    assert (hits[0].kind, hits[0].conversation_id, hits[0].message_id) == ("message", chat.pk, 1)
    assert hits[0].date == START.replace(minute=1) and hits[0].score > 0


def test_hits_come_best_first(wendy, say):
    chat, _ = say(ALICE, "the dog barked at the mailman")
    say(ALICE, "my dog Rex chased a cat, the dog is fast, a dog of a dog")
    say(ALICE, "cats sleep all day")

    hits = recall_search(agent_id=wendy.pk, query="dog cat", conversation=chat)

    assert _texts(hits)[0] == "my dog Rex chased a cat, the dog is fast, a dog of a dog"
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_alice_s_chat_never_finds_what_bob_said(wendy, say):
    alice, _ = say(ALICE, "see you at the concert")
    bob, _ = say(BOB, "my bank password is hunter2, keep the secret")
    Note.objects.create(
        agent=wendy, channel_id=BOB, entry_id="note-1", content="Bob's secret: hunter2", created=START
    )
    Memory.objects.create(agent=wendy, kind="curated", partner_id=BOB, content="Bob keeps a secret password")

    for query in ("secret password", "hunter2", "Bob secret"):
        assert recall_search(agent_id=wendy.pk, query=query, conversation=alice) == []
    found = recall_search(agent_id=wendy.pk, query="secret password", conversation=bob)
    assert {hit.kind for hit in found} == {"message", "note", "memory"}
    assert {hit.conversation_id for hit in found} == {bob.pk}


def test_global_memories_are_recalled_in_every_chat_and_an_operator_finds_everything(wendy, say):
    alice, _ = say(ALICE, "hello")
    bob, _ = say(BOB, "the lighthouse keeper story")
    Memory.objects.create(agent=wendy, kind="episodic", content="I grew up near a lighthouse", created=START)

    assert _texts(recall_search(agent_id=wendy.pk, query="lighthouse", conversation=alice)) == [
        "I grew up near a lighthouse"
    ]
    everything = recall_search(agent_id=wendy.pk, query="lighthouse")
    assert sorted(_texts(everything)) == ["I grew up near a lighthouse", "the lighthouse keeper story"]


def test_another_agent_s_entries_are_never_found(wendy, say):
    from engine.tests.cast import make_agent

    heidi = make_agent("Heidi", phone="+15550000002")
    say(ALICE, "the orchard behind the house", agent=heidi)

    assert recall_search(agent_id=wendy.pk, query="orchard") == []
    assert len(recall_search(agent_id=heidi.pk, query="orchard")) == 1


def test_an_edit_replaces_what_is_found(wendy, say):
    chat, _ = say(ALICE, "meet me at the bakery", message_id=7)
    say(ALICE, "meet me at the library", message_id=7, edited=True)

    assert recall_search(agent_id=wendy.pk, query="bakery", conversation=chat) == []
    assert _texts(recall_search(agent_id=wendy.pk, query="library", conversation=chat)) == [
        "meet me at the library"
    ]
    assert RecallEntry.objects.filter(kind="message").count() == 1


def test_deleted_and_cleared_messages_are_no_longer_found(wendy, say):
    chat, _ = say(ALICE, "the password is swordfish")
    say(ALICE, "the garden needs water")
    bob, _ = say(BOB, "the garden gnome")

    messages_mark_deleted(agent=wendy, peer_id=ALICE, message_ids=(1,))
    assert recall_search(agent_id=wendy.pk, query="swordfish") == []

    conversation_clear_mirror(conversation=chat)
    assert _texts(recall_search(agent_id=wendy.pk, query="garden")) == ["the garden gnome"]


def test_stored_records_follow_their_changes(wendy, say):
    chat, _ = say(ALICE, "hi")
    note = Note.objects.create(
        agent=wendy, channel_id=ALICE, entry_id="note-1", content="likes tulips", created=START
    )
    assert recall_search(agent_id=wendy.pk, query="tulip", conversation=chat)[0].kind == "note"

    note.content = "likes roses"
    note.save()
    assert recall_search(agent_id=wendy.pk, query="tulip", conversation=chat) == []
    assert recall_search(agent_id=wendy.pk, query="roses", conversation=chat)[0].conversation_id == chat.pk

    note.delete()
    assert recall_search(agent_id=wendy.pk, query="roses") == []


@pytest.mark.parametrize("query", ["", "   ", "?!", "—"])
def test_a_query_without_words_is_refused_with_the_reason(wendy, query):
    with pytest.raises(RecallQueryError, match="no words to search for") as error:
        recall_search(agent_id=wendy.pk, query=query)
    assert error.value.field == "q"


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1])
def test_a_limit_out_of_range_is_refused(wendy, limit):
    with pytest.raises(RecallQueryError, match=f"limit {limit} is out of range: ask for 1 to {MAX_LIMIT}"):
        recall_search(agent_id=wendy.pk, query="anything", limit=limit)


def test_query_syntax_is_searched_as_words(wendy, say):
    chat, _ = say(ALICE, 'she said "NOT now" OR later (maybe) near* the end')

    for query in ('"NOT', "NOT OR", "near*", "(maybe", "end:"):
        assert len(recall_search(agent_id=wendy.pk, query=query, conversation=chat)) == 1, query


def test_a_deleted_conversation_takes_its_messages_and_leaves_its_chat_s_records(wendy, say):
    chat, _ = say(ALICE, "the orchard is in bloom")
    Note.objects.create(
        agent=wendy, channel_id=ALICE, entry_id="note-1", content="orchard visit", created=START
    )

    chat.delete()

    [hit] = recall_search(agent_id=wendy.pk, query="orchard")
    assert (hit.kind, hit.conversation_id) == ("note", None)
    again, _ = say(ALICE, "hello again")
    assert [
        h.conversation_id for h in recall_search(agent_id=wendy.pk, query="orchard", conversation=again)
    ] == [again.pk]


def test_a_group_with_a_negative_peer_id_recalls_its_own_messages(wendy, say):
    group, _ = say(-1001234, "the picnic is on Saturday", chat_title="Friends")
    other, _ = say(-1001235, "the picnic was cancelled", chat_title="Others")

    assert _texts(recall_search(agent_id=wendy.pk, query="picnics", conversation=group)) == [
        "the picnic is on Saturday"
    ]
    assert _texts(recall_search(agent_id=wendy.pk, query="picnics", conversation=other)) == [
        "the picnic was cancelled"
    ]


def test_a_text_that_spells_another_chat_s_scoped_word_is_not_found_there(wendy, say):
    # Each word is indexed also prefixed with its chat (recall/fulltext.py). On MariaDB a text cannot
    # write another chat's prefixed word, since an underscore splits words; on SQLite the prefix
    # joins with an `x`, and a text's word that spells another chat's is prefixed with its own chat.
    say(ALICE, f"c{wendy.pk}p{BOB}t0_secret and g{wendy.pk}_secret")
    say(ALICE, f"c{wendy.pk}p{BOB}t0xsecret and g{wendy.pk}xsecret c{wendy.pk}p{BOB}t0xhidden")
    bob, _ = say(BOB, "hello")

    for query in ("secret", "hidden", f"c{wendy.pk}p{BOB}t0xsecret", f"g{wendy.pk}xsecret"):
        assert recall_search(agent_id=wendy.pk, query=query, conversation=bob, mode="fulltext") == []
    assert len(recall_search(agent_id=wendy.pk, query="secret", mode="fulltext")) == 1


def test_the_best_matches_outside_a_turn_s_history_are_found_however_many_newer_ones_rank_first(
    wendy, say, monkeypatch
):
    # SQLite ranks the full-text matches before it reads the entry table for the best FTS_DEPTH of
    # them; when the history's bound leaves out all of those, every match is ranked again.
    from recall import selectors

    monkeypatch.setattr(selectors, "FTS_DEPTH", 3)
    chat, _ = say(ALICE, "the lighthouse keeper retired")
    for _ in range(5):
        say(ALICE, "lighthouse")

    found = recall_search(
        agent_id=wendy.pk, query="lighthouse", conversation=chat, mode="fulltext", limit=1, messages_before=2
    )
    everything = recall_search(
        agent_id=wendy.pk, query="lighthouse", conversation=chat, mode="fulltext", limit=4
    )

    assert _texts(found) == ["the lighthouse keeper retired"]
    assert [h.message_id for h in everything] == [6, 5, 4, 3]
