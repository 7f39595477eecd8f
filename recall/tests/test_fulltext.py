"""MariaDB's FULLTEXT terms: each word plain and prefixed with its scope (recall/fulltext.py)."""

from __future__ import annotations

from recall.fulltext import entry_terms, scope_key, scoped
from recall.stemming import terms


def test_an_entry_s_terms_hold_each_word_plain_then_prefixed_with_its_chat():
    stems = terms("Weddings in Zürich").split()

    assert (
        entry_terms(stems, agent_id=7, peer_id=1001, topic_id=0)
        == "wed in zurich c7p1001t0_wed c7p1001t0_zurich"
    )


def test_global_entries_and_groups_have_their_own_prefix():
    assert scope_key(7, None, 0) == "g7"
    assert scope_key(7, -1001234, 5) == "c7pn1001234t5"


def test_words_innodb_ignores_get_no_scoped_form():
    # InnoDB's stopwords and words under 3 letters are not indexed plainly; scoped, they would be.
    assert scoped("g7", ["the", "ab", "about", "www", "lighthous", "2026"]) == ["g7_lighthous", "g7_2026"]


def test_a_long_word_is_cut_the_same_way_in_the_index_and_the_query():
    long = "x" * 80
    (word,) = scoped("c7p1t0", [long])
    assert word == "c7p1t0_" + "x" * 48 and len(word) <= 84


def test_sqlite_terms_hold_every_word_scoped_with_a_letter_fts5_keeps_inside_a_word():
    from recall.fulltext import sqlite_terms

    stems = terms("The weddings in Zürich").split()

    assert sqlite_terms(stems, agent_id=7, peer_id=1001, topic_id=0) == (
        "c7p1001t0xthe c7p1001t0xwed c7p1001t0xin c7p1001t0xzurich"
    )
    assert sqlite_terms(["wed"], agent_id=7, peer_id=None, topic_id=0) == "g7xwed"


def test_a_chat_s_search_on_sqlite_asks_for_its_chat_s_and_the_global_scoped_words():
    from types import SimpleNamespace

    from recall.selectors import _fts_match

    chat = SimpleNamespace(peer_id=-1001234, topic_id=5)
    assert _fts_match(7, ["weddings", "wedding", "zurich"], chat) == (
        'scope : ("c7pn1001234t5xwed" OR "c7pn1001234t5xzurich" OR "g7xwed" OR "g7xzurich")',
        "0.0, 1.0",
    )
    assert _fts_match(7, ["weddings"], None) == ('text : ("weddings") AND scope : "a7"', "1.0, 0.0")
