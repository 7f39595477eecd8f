"""Provider embeddings for recall: the real google-genai and openai SDKs against a local server that
speaks their embedding wire formats; the fill in batches (costed, resumable, one run at a time), the
query's call (cached), the third ranking, the fallback when the provider fails or is slow, and vectors
kept apart per model."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from llm import embeddings
from llm.embeddings import recall_embeddings_fill
from llm.models import LLMCall
from llm.tests.embedding_server import running_embedding_server, words
from recall import provider_vectors
from recall.models import RecallEmbeddingFill, RecallProviderVector
from recall.provider_vectors import entries_missing, fill_claim
from recall.selectors import RecallQueryError, recall_search
from recall.similar import RRF_K
from recall.tests.conftest import ALICE, BOB

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

GEMINI, OPENAI = "gemini-embedding-001", "text-embedding-3-small"
MODELS = [
    pytest.param(GEMINI, "gemini", ":batchEmbedContents", Decimal("0.15"), id="gemini"),
    pytest.param(OPENAI, "openai", "/v1/embeddings", Decimal("0.02"), id="openai"),
]
TEXTS = [
    "dad's heart surgery is scheduled for the 9th",
    "the tram was packed this morning",
    "Jane sent a photo of her lunch",
    "dropped my phone in the car park and the screen shattered",
    "the vet says Rufus needs a new diet",
]


@pytest.fixture
def server(settings, clock):
    provider_vectors.provider_state_reset()
    with running_embedding_server() as running:
        settings.GOOGLE_GEMINI_API_KEY = "gemini-key"
        settings.GEMINI_BASE_URL = running.url
        settings.OPENAI_API_KEY = "openai-key"
        settings.OPENAI_BASE_URL = running.url + "/v1"
        yield running
    provider_vectors.provider_state_reset()


@pytest.fixture
def chat(wendy, say):
    conversation = None
    for text in TEXTS:
        conversation, _ = say(ALICE, text)
    return conversation


def _calls(**filters):
    return list(LLMCall.objects.filter(purpose=LLMCall.Purpose.EMBED, **filters).order_by("pk"))


@pytest.mark.parametrize(("model", "provider", "path", "price"), MODELS)
def test_the_fill_embeds_entries_in_batches_and_costs_each_call(
    settings, server, chat, model, provider, path, price
):
    settings.CINDY_RECALL_EMBEDDINGS = model

    outcome = recall_embeddings_fill(batch=2)

    assert (outcome.embedded, outcome.calls, outcome.more, outcome.error) == (5, 3, False, "")
    assert [p.endswith(path) for p, _ in server.requests] == [True] * 3
    # Newest first, two a call, each text once.
    assert server.texts() == [TEXTS[4:2:-1], TEXTS[2:0:-1], TEXTS[:1]]
    body = server.requests[0][1]
    if provider == "gemini":
        assert {(r["taskType"], r["outputDimensionality"], r["model"]) for r in body["requests"]} == {
            ("RETRIEVAL_DOCUMENT", embeddings.DIMENSIONS, f"models/{model}")
        }
    else:
        assert (body["model"], body["dimensions"], body["encoding_format"]) == (
            model,
            embeddings.DIMENSIONS,
            "float",
        )
    stored = RecallProviderVector.objects.filter(model=model)
    assert stored.count() == 5
    assert {len(bytes(v.vector)) for v in stored} == {embeddings.DIMENSIONS * 2}
    calls = _calls()
    assert [(c.provider, c.model, c.status) for c in calls] == [(provider, model, "ok")] * 3
    # The tokens the provider counted (the server counts words), at the model's price per million.
    tokens = [sum(words(t) for t in texts) for texts in server.texts()]
    assert [c.input_tokens for c in calls] == tokens
    assert [c.cost for c in calls] == [
        (Decimal(t) * price / 1_000_000).quantize(Decimal("0.000001")) for t in tokens
    ]
    assert RecallEmbeddingFill.objects.get(model=model).embedded == 5
    assert entries_missing(model, limit=10) == []


@pytest.mark.parametrize(("model", "provider", "path", "price"), MODELS)
def test_a_fused_search_embeds_its_query_once_and_fuses_a_third_ranking(
    settings, server, clock, wendy, chat, model, provider, path, price
):
    settings.CINDY_RECALL_EMBEDDINGS = model
    recall_embeddings_fill()
    server.requests.clear()

    hits = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, limit=3)
    again = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, limit=3)

    # First in all three rankings (words, local vectors, the provider's): 3 / (RRF_K + 1).
    assert hits[0].text == TEXTS[0]
    assert hits[0].score == round(3 / (RRF_K + 1), 6)
    assert again == hits
    assert server.texts() == [["heart surgery"]]  # one call, then the cached vector
    if provider == "gemini":
        assert server.requests[0][1]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    query_call = _calls()[-1]
    assert (query_call.agent_id, query_call.status, query_call.input_tokens) == (wendy.pk, "ok", 2)

    only = recall_search(
        agent_id=wendy.pk, query="vet Rufus diet", conversation=chat, mode="provider", limit=2
    )
    assert only[0].text == TEXTS[4]

    clock.advance(provider_vectors.QUERY_CACHE_SECONDS + 1)
    recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, limit=3)
    assert server.texts()[-1] == ["heart surgery"]
    assert len(server.texts()) == 3


def test_the_provider_ranking_keeps_to_the_conversation_s_scope(settings, server, wendy, say, chat):
    bob, _ = say(BOB, "my surgery password is hunter2")
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    recall_embeddings_fill()

    hits = recall_search(
        agent_id=wendy.pk, query="surgery password hunter2", conversation=chat, mode="provider"
    )

    assert "hunter2" not in " ".join(h.text for h in hits)
    assert {h.conversation_id for h in hits} == {chat.pk}
    assert recall_search(agent_id=wendy.pk, query="hunter2", conversation=bob, mode="provider")[
        0
    ].text.endswith("hunter2")


def test_a_failing_provider_leaves_the_search_to_words_and_local_vectors(
    settings, server, wendy, chat, caplog
):
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    recall_embeddings_fill()
    settings.CINDY_RECALL_EMBEDDINGS = ""
    without = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat)
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    settings.CINDY_LLM_BREAKER_FAILURES = 2
    server.fail_next(503, times=2)

    with caplog.at_level(logging.WARNING, logger="recall.provider_vectors"):
        first = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat)
        second = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat)
        asked = len(server.requests)
        # The breaker is open after two failures: the third search makes no call at all.
        third = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat)

    assert first == second == third == without
    assert len(server.requests) == asked
    failed = _calls(status="error")
    assert len(failed) == 2 and "503" in failed[0].error
    warnings = [r for r in caplog.records if "query embedding failed" in r.getMessage()]
    assert len(warnings) == 1  # logged once per process and error


def test_a_slow_provider_is_not_waited_for(settings, server, wendy, chat, monkeypatch):
    settings.CINDY_RECALL_EMBEDDINGS = OPENAI
    recall_embeddings_fill()
    settings.CINDY_RECALL_EMBEDDINGS = ""
    without = recall_search(agent_id=wendy.pk, query="tram packed", conversation=chat)
    settings.CINDY_RECALL_EMBEDDINGS = OPENAI
    monkeypatch.setattr(embeddings, "QUERY_TIMEOUT_SECONDS", 0.3)
    server.hold()

    hits = recall_search(agent_id=wendy.pk, query="tram packed", conversation=chat)

    server.release()
    assert hits == without
    assert _calls()[-1].status == "error"


def test_an_unknown_embedding_provider_is_named_and_the_search_goes_on(settings, server, wendy, chat):
    settings.CINDY_RECALL_EMBEDDINGS = "claude-sonnet-4"

    outcome = recall_embeddings_fill()
    hits = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat)

    assert "CINDY_RECALL_EMBEDDINGS" in outcome.error and "anthropic" in outcome.error
    assert hits[0].text == TEXTS[0]
    assert server.requests == []
    with pytest.raises(RecallQueryError, match="CINDY_RECALL_EMBEDDINGS"):
        settings.CINDY_RECALL_EMBEDDINGS = ""
        recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, mode="provider")


def test_switching_the_model_never_mixes_vectors(settings, server, wendy, chat):
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    recall_embeddings_fill()
    settings.CINDY_RECALL_EMBEDDINGS = OPENAI
    server.requests.clear()

    # The new model has no vectors yet: its ranking is empty, never the old model's vectors.
    assert recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, mode="provider") == []
    assert server.texts() == [["heart surgery"]]
    assert len(entries_missing(OPENAI, limit=10)) == 5

    recall_embeddings_fill()

    assert RecallProviderVector.objects.filter(model=GEMINI).count() == 5
    assert RecallProviderVector.objects.filter(model=OPENAI).count() == 5
    hits = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, mode="provider")
    assert hits[0].text == TEXTS[0]


def test_the_fill_resumes_after_a_bounded_run_and_after_a_failed_call(settings, server, chat):
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI

    first = recall_embeddings_fill(batches=1, batch=2)
    assert (first.embedded, first.more) == (2, True)
    server.fail_next(500)
    failed = recall_embeddings_fill(batches=5, batch=2)
    assert (failed.embedded, failed.calls) == (0, 0) and "500" in failed.error
    rest = recall_embeddings_fill(batches=5, batch=2)

    assert (rest.embedded, rest.more) == (3, False)
    texts = server.texts()
    assert texts[0] == TEXTS[4:2:-1]
    assert texts[1] == texts[2] == TEXTS[2:0:-1]  # the failed batch is asked again, nothing else twice
    assert texts[3] == TEXTS[:1]
    assert RecallEmbeddingFill.objects.get(model=GEMINI).embedded == 5
    assert recall_embeddings_fill().calls == 0


def test_one_fill_runs_at_a_time(settings, server, clock, chat):
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    assert fill_claim(GEMINI, seconds=300)

    busy = recall_embeddings_fill()

    assert busy.busy and server.requests == []
    clock.advance(301)  # the claim of a run whose worker died runs out
    assert recall_embeddings_fill().embedded == 5


def test_an_edited_message_s_old_vector_is_dropped_and_embedded_again(settings, server, wendy, say, chat):
    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    recall_embeddings_fill()
    say(ALICE, "the cat knocked the vase over", message_id=1, edited=True)

    hits = recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat, mode="provider")

    assert TEXTS[0] not in [h.text for h in hits]
    assert [text for _, text in entries_missing(GEMINI, limit=10)] == ["the cat knocked the vase over"]
    recall_embeddings_fill()
    hits = recall_search(agent_id=wendy.pk, query="cat vase", conversation=chat, mode="provider")
    assert hits[0].text == "the cat knocked the vase over"


def test_a_search_queues_the_fill_when_its_scope_lacks_vectors(settings, server, clock, wendy, chat):
    from django_q.models import OrmQ

    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    queued = OrmQ.objects.count()

    recall_search(agent_id=wendy.pk, query="heart surgery", conversation=chat)
    recall_search(agent_id=wendy.pk, query="tram", conversation=chat)  # within the minute: not again

    assert OrmQ.objects.count() == queued + 1
    assert OrmQ.objects.order_by("-pk").first().func() == embeddings.TASK


def test_the_command_embeds_every_entry_in_the_foreground(settings, server, chat, monkeypatch):
    from io import StringIO

    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="CINDY_RECALL_EMBEDDINGS is not set"):
        call_command("recall_embed")
    settings.CINDY_RECALL_EMBEDDINGS = OPENAI
    monkeypatch.setattr(embeddings, "BATCHES_PER_RUN", 1)
    monkeypatch.setattr(embeddings, "BATCH", 2)
    out = StringIO()

    call_command("recall_embed", stdout=out)

    assert out.getvalue().splitlines() == [
        f"recall embeddings ({OPENAI}): 2 entries embedded in 1 calls; more remain",
        f"recall embeddings ({OPENAI}): 2 entries embedded in 1 calls; more remain",
        f"recall embeddings ({OPENAI}): 1 entries embedded in 1 calls",
    ]
    assert entries_missing(OPENAI, limit=10) == []


def test_the_worker_job_queues_its_next_run_while_entries_remain(settings, server, chat, monkeypatch):
    from django_q.models import OrmQ

    settings.CINDY_RECALL_EMBEDDINGS = GEMINI
    monkeypatch.setattr(embeddings, "BATCHES_PER_RUN", 2)
    monkeypatch.setattr(embeddings, "BATCH", 2)
    queued = OrmQ.objects.count()

    first = embeddings.recall_embeddings_fill_task()
    assert first.endswith("4 entries embedded in 2 calls; more remain; the next run is queued")
    assert OrmQ.objects.count() == queued + 1
    assert OrmQ.objects.order_by("-pk").first().func() == embeddings.TASK

    last = embeddings.recall_embeddings_fill_task()
    assert last.endswith("1 entries embedded in 1 calls")
    assert OrmQ.objects.count() == queued + 1
