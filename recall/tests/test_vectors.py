"""Meaning as well as words: the vectors load offline, find paraphrases that words miss, and keep
to the conversation's scope."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from conversations.services.ingest import message_upsert
from conversations.transport.base import InboundMessage
from recall import embedding
from recall.models import RecallEntry
from recall.selectors import RecallQueryError, recall_search
from recall.similar import RRF_K, fuse
from recall.tests.conftest import ALICE, BOB

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

EVAL = Path(settings.BASE_DIR) / "bench" / "recall_eval"


def test_the_model_loads_from_the_installed_package_without_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("recall tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    embedding.model.cache_clear()

    texts = ["my sister's wedding", "when did Jane get married?", "!!!", ""]
    vectors = embedding.embed(texts)

    assert vectors.shape == (4, embedding.DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5) and not vectors[3].any()
    stored = embedding.from_blobs([embedding.to_blob(v) for v in vectors])
    assert np.allclose(stored, vectors, atol=1e-3)
    assert float(vectors[0] @ vectors[1]) > 0.3


def test_the_vectors_are_the_package_s_own(monkeypatch):
    """The memory-mapped table gives what WordLlama's own loader (offline, from the same folder) gives."""
    from wordllama import WordLlama

    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: pytest.fail("network"))
    own = WordLlama.load(cache_dir=embedding.package_folder(), disable_download=True)
    texts = ["dad's heart surgery is scheduled for the 9th", "when is my father's operation?"]

    assert np.allclose(embedding.embed(texts), own.embed(texts, norm=True), atol=1e-5)


def test_a_process_that_neither_indexes_nor_searches_loads_no_model():
    script = (
        "import sys, django; django.setup(); import recall.services, recall.selectors, recall.receivers; "
        "print(sorted(m for m in ('numpy', 'tokenizers', 'wordllama') if m in sys.modules))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cindy_site.settings", "SECRET_KEY": "x", "DEBUG": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=settings.BASE_DIR,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_ingest_writes_a_message_without_its_vector_and_never_loads_the_model(wendy, say, monkeypatch):
    """The gateway's ingest (`message_upsert`) pays neither the model's memory nor its CPU."""

    def refuse():
        raise AssertionError("ingest loaded the embedding model")

    monkeypatch.setattr(embedding, "model", refuse)
    say(ALICE, "the ferry leaves at noon")
    say(ALICE, "the ferry leaves at one", message_id=1, edited=True)

    entry = RecallEntry.objects.get()
    assert entry.text == "the ferry leaves at one" and entry.vector is None


def test_the_first_search_that_scans_an_entry_gives_it_its_vector_once(wendy, say):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    chat, _ = say(ALICE, "the ferry leaves at noon")
    question = {"agent_id": wendy.pk, "query": "when does the boat depart?", "conversation": chat}

    assert recall_search(**question, mode="vectors")[0].text == "the ferry leaves at noon"
    entry = RecallEntry.objects.get()
    again = embedding.embed(["the ferry leaves at noon"])[0]
    assert float(embedding.from_blobs([bytes(entry.vector)])[0] @ again) > 0.999
    with CaptureQueriesContext(connection) as queries:
        assert recall_search(**question, mode="fused")[0].text == "the ferry leaves at noon"
    assert not [q for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]

    say(ALICE, "the ferry leaves at one", message_id=1, edited=True)  # an edit: the old vector goes
    assert RecallEntry.objects.get().vector is None
    assert recall_search(**question, mode="vectors")[0].text == "the ferry leaves at one"
    assert RecallEntry.objects.get().vector is not None


def _ingest(agent, peer: int, messages: list[dict]):
    chat = None
    for m in messages:
        outgoing = m["from"] == "agent"
        record = InboundMessage(
            peer_id=peer,
            chat_kind="dm",
            message_id=m["id"],
            date=dt.datetime.fromisoformat(m["date"]),
            sender_id=None if outgoing else peer,
            text=m["text"],
            is_outgoing=outgoing,
        )
        chat, _, _ = message_upsert(agent=agent, record=record, edited=False)
    return chat


def test_a_paraphrase_from_the_evaluation_set_is_found_by_the_fused_search_only(wendy):
    data = json.loads((EVAL / "long_dm_d.json").read_text(encoding="utf-8"))
    question = next(q for q in data["questions"] if q["question"] == "how did my mobile get damaged?")
    (answer,) = question["answers"]
    chat = _ingest(wendy, ALICE, [m for m in data["messages"] if m["id"] <= answer + 60])

    def found(mode: str) -> list[int]:
        hits = recall_search(agent_id=wendy.pk, query=question["question"], conversation=chat, mode=mode)
        return [h.message_id for h in hits]

    assert answer not in found("fulltext")
    assert answer in found("fused")
    assert found("vectors")[0] == answer
    assert found("fused") == [
        h.message_id for h in recall_search(agent_id=wendy.pk, query=question["question"], conversation=chat)
    ]


def test_the_vectors_keep_to_the_conversation_s_scope(wendy, say):
    alice, _ = say(ALICE, "see you at the concert on Friday")
    bob, _ = say(BOB, "Jane finally tied the knot on Saturday, the ceremony was by the lake")

    for mode in ("vectors", "fused"):
        assert (
            recall_search(
                agent_id=wendy.pk, query="when did Jane get married?", conversation=alice, mode=mode
            )
            == []
        )
        hits = recall_search(
            agent_id=wendy.pk, query="when did Jane get married?", conversation=bob, mode=mode
        )
        assert [h.conversation_id for h in hits] == [bob.pk]


def test_with_vectors_off_entries_have_none_and_searches_use_words(wendy, say, settings):
    settings.CINDY_RECALL_VECTORS = False
    # Another chat's entry first: InnoDB's relevance weighs a word by log(entries / entries with it),
    # which a one-entry index makes 0 on MariaDB whatever matched.
    say(BOB, "the weather stayed grey all week")
    chat, _ = say(ALICE, "Jane finally tied the knot on Saturday")

    assert not RecallEntry.objects.exclude(vector=None).exists()
    assert (
        recall_search(agent_id=wendy.pk, query="when did Jane get married?", conversation=chat)[0].score > 0
    )
    assert recall_search(agent_id=wendy.pk, query="married", conversation=chat) == []
    assert recall_search(agent_id=wendy.pk, query="married", conversation=chat, mode="vectors") == []


def test_an_unknown_mode_is_refused_by_name(wendy):
    with pytest.raises(
        RecallQueryError, match="search mode 'semantic' is unknown: use one of fused, fulltext"
    ):
        recall_search(agent_id=wendy.pk, query="wedding", mode="semantic")


def test_reciprocal_rank_fusion_adds_each_ranking_s_share():
    fused = dict(fuse([[1, 2, 3], [3, 4]]))

    assert fused[3] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert fused[1] == pytest.approx(1 / (RRF_K + 1))
    assert [entry for entry, _ in fuse([[1, 2, 3], [3, 4]])] == [3, 1, 4, 2]


def test_the_build_gives_vectors_to_entries_written_without_them(wendy, say, settings):
    from io import StringIO

    from django.core.management import call_command

    settings.CINDY_RECALL_VECTORS = False
    chat, _ = say(ALICE, "dropped my phone in the car park and the screen shattered")
    say(ALICE, "the bus was late again")
    call_command("recall_index", "Wendy", stdout=StringIO())  # built before vectors were on
    settings.CINDY_RECALL_VECTORS = True
    question = {"agent_id": wendy.pk, "query": "how did my mobile get damaged?", "conversation": chat}
    assert RecallEntry.objects.filter(vector__isnull=True).count() == 2

    out = StringIO()
    call_command("recall_index", "Wendy", stdout=out)

    assert "Wendy: vectors given to 2 entries that had none" in out.getvalue()
    assert not RecallEntry.objects.filter(vector__isnull=True).exists()
    hits = recall_search(**question, mode="vectors")
    assert hits[0].text == "dropped my phone in the car park and the screen shattered"


def test_a_fused_search_ranks_by_its_subject_words_and_by_stopwords_only_when_it_has_no_others(
    wendy, say, monkeypatch
):
    from recall import selectors

    asked = []
    real = selectors._fulltext

    def fulltext(agent_id, found, *args, **kwargs):
        asked.append(list(found))
        return real(agent_id, found, *args, **kwargs)

    monkeypatch.setattr(selectors, "_fulltext", fulltext)
    chat, _ = say(ALICE, "the ferry leaves at noon")
    say(ALICE, "to be or not to be")

    ferry = recall_search(agent_id=wendy.pk, query="when is the ferry", conversation=chat, mode="fused")
    hamlet = recall_search(agent_id=wendy.pk, query="to be or not", conversation=chat, mode="fused")

    assert asked == [["ferry"], ["to", "be", "or", "not"]]
    assert ferry[0].text == "the ferry leaves at noon"
    assert "to be or not to be" in [h.text for h in hamlet]
