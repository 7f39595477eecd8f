"""Provider embeddings for recall: the calls (docs/recall.md, "Provider embeddings").

`CINDY_RECALL_EMBEDDINGS` names the model the way LLM names do: `gemini-embedding-001` is Gemini's
(google-genai `models.embed_content`, one `batchEmbedContents` request a call), `text-embedding-3-small`
(or `openai:...`) OpenAI's (`embeddings.create`, one `/embeddings` request), `NAME:model` an
OpenAI-compatible endpoint's (CINDY_LLM_ENDPOINTS or the admin's table: Ollama, vLLM). Keys and base
URLs are the chat providers' (`llm.providers.provider_for`).

Each call is an `LLMCall` of purpose `embed`, written before it is sent and costed at the model's
price (llm/prices.py: input tokens only; the tokens the provider reports, or the text's length / 4
when it reports none), with its activity event, like every other call. A failed call counts on the
route's circuit breaker (llm/breakers.py); while that is open, no call is made. A query is one call
with a short timeout and no retry: a search waits for it at most QUERY_TIMEOUT_SECONDS, then goes on
without it (`recall.provider_vectors`). The fill is a django-q2 job (`recall_embeddings_fill_task`)
that embeds BATCH entries a call, at most BATCHES_PER_RUN calls a run, and queues itself again while
entries remain; one run at a time (`recall.provider_vectors.fill_claim`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from cindy_site.llm_endpoints import endpoint_lookup
from llm.breakers import breaker_admits, breaker_failure, breaker_success, breakers_of
from llm.calls import classify_sdk_error
from llm.errors import LLMConfigError, LLMError
from llm.models import LLMCall
from llm.providers import provider_for
from llm.request import Usage
from llm.routing import Route, UnknownModelError, resolve
from llm.usage import llm_call_finish, llm_call_start
from recall.provider_vectors import (
    Embedder,
    ProviderEmbeddingFailed,
    embeddings_model,
    entries_missing,
    fill_claim,
    fill_release,
    provider_embedder_install,
    vectors_store,
)

logger = logging.getLogger(__name__)

#: Dimensions asked of the model (Gemini's `output_dimensionality`, OpenAI's `dimensions`): 768 keeps
#: most of gemini-embedding-001's and text-embedding-3's quality at a quarter of their full size.
DIMENSIONS = 768
#: A search waits this long for its query's vector, then goes on without it.
QUERY_TIMEOUT_SECONDS = 5.0
#: Entries per call of the fill (Gemini takes at most 100 texts a request).
BATCH = 100
#: Calls per run of the fill; a run with more left queues the next.
BATCHES_PER_RUN = 20
#: A text is cut to this many characters before it is sent (gemini-embedding-001 reads 2,048 tokens).
MAX_TEXT_CHARS = 6000
TASK = "llm.embeddings.recall_embeddings_fill_task"
PROVIDERS_WITH_EMBEDDINGS = ("gemini", "openai")


def embedding_route(name: str) -> Route:
    """The route of an embedding model's name, or UnknownModelError naming the value and the fix."""
    raw = name.strip()
    route = Route("openai", raw) if raw.lower().startswith("text-embedding") else resolve(raw)
    if route.provider in PROVIDERS_WITH_EMBEDDINGS or endpoint_lookup(route.provider) is not None:
        return route
    raise UnknownModelError(
        f'CINDY_RECALL_EMBEDDINGS is "{name}", a {route.provider} model, and {route.provider} has no '
        "embeddings here: use a Gemini model (gemini-embedding-001), an OpenAI one "
        "(text-embedding-3-small) or an OpenAI-compatible endpoint's (NAME:model)"
    )


def embed_texts(
    texts: Sequence[str], *, model_name: str, query: bool, agent_id: int | None = None
) -> list[list[float]]:
    """One embedding call: a vector per text, in order. Raises ProviderEmbeddingFailed (naming the
    model and why) for anything that gives no vectors: no key, an open breaker, an error, a timeout,
    a reply of the wrong shape."""
    try:
        route = embedding_route(model_name)
        provider = provider_for(route.provider)
    except (UnknownModelError, LLMConfigError) as exc:
        raise ProviderEmbeddingFailed(str(exc)) from exc
    where = f"{route.provider}/{route.model}"
    if not hasattr(provider, "embed"):
        raise ProviderEmbeddingFailed(f"{where}: this provider has no embeddings")
    breaker = breakers_of([route]).get(route)
    if not breaker_admits(route, breaker):
        raise ProviderEmbeddingFailed(f"{where}: its circuit breaker is open after repeated failures")
    cut = [text[:MAX_TEXT_CHARS] for text in texts]
    estimated = sum(len(text) for text in cut) // 4
    record = llm_call_start(
        provider=route.provider,
        model=route.model,
        purpose=LLMCall.Purpose.EMBED,
        agent_id=agent_id,
        conversation_id=None,
        node_id=None,
        estimated_input_tokens=estimated,
    )
    started = time.perf_counter()
    try:
        try:
            embedded = provider.embed(
                cut,
                model=route.model,
                dimensions=DIMENSIONS,
                query=query,
                timeout=QUERY_TIMEOUT_SECONDS if query else None,
            )
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever an SDK raises is classified, as in llm.calls
            raise classify_sdk_error(exc, route=route) from exc
        vectors = embedded.vectors
        if len(vectors) != len(cut) or any(
            len(vector) != len(vectors[0]) or not vector for vector in vectors
        ):
            raise LLMError(
                f"{where} answered {len(vectors)} vectors of sizes {sorted({len(v) for v in vectors})} "
                f"for {len(cut)} texts"
            )
    except LLMError as exc:
        _finish(record, started, input_tokens=estimated, status="error", error=str(exc))
        if not isinstance(exc, LLMConfigError):
            breaker_failure(route, error=str(exc), retry_after=getattr(exc, "retry_after", None))
        raise ProviderEmbeddingFailed(f"{where}: {exc}") from exc
    except BaseException as exc:
        _finish(record, started, input_tokens=estimated, status="error", error=f"interrupted: {exc!r}")
        raise
    tokens = embedded.input_tokens if embedded.input_tokens is not None else estimated
    _finish(record, started, input_tokens=tokens, status="ok")
    breaker_success(route, breaker)
    return vectors


def _finish(record: LLMCall, started: float, *, input_tokens: int, status: str, error: str = "") -> None:
    latency = int((time.perf_counter() - started) * 1000)
    llm_call_finish(
        record, usage=Usage(input_tokens=input_tokens), status=status, latency_ms=latency, error=error
    )


@dataclass
class FillOutcome:
    model: str = ""
    embedded: int = 0
    calls: int = 0
    more: bool = False
    busy: bool = False
    error: str = ""

    def summary(self) -> str:
        if not self.model:
            return "recall embeddings: CINDY_RECALL_EMBEDDINGS is not set; nothing to embed"
        if self.busy:
            return f"recall embeddings ({self.model}): another run is under way"
        text = f"recall embeddings ({self.model}): {self.embedded} entries embedded in {self.calls} calls"
        if self.error:
            text += f"; stopped: {self.error}"
        elif self.more:
            text += "; more remain"
        return text


def recall_embeddings_fill(*, batches: int | None = None, batch: int | None = None) -> FillOutcome:
    """Embed the newest entries without a vector of the model set, `batch` (BATCH) a call, at most
    `batches` (BATCHES_PER_RUN) calls; stops at the first failed call (its entries are asked again
    by the next run)."""
    batches = BATCHES_PER_RUN if batches is None else batches
    batch = BATCH if batch is None else batch
    outcome = FillOutcome(model=embeddings_model())
    if not outcome.model:
        return outcome
    if not fill_claim(outcome.model, seconds=float(settings.Q_CLUSTER["timeout"])):
        outcome.busy = True
        return outcome
    try:
        for _ in range(batches):
            missing = entries_missing(outcome.model, limit=batch)
            if not missing:
                return outcome
            try:
                vectors = embed_texts([text for _, text in missing], model_name=outcome.model, query=False)
            except ProviderEmbeddingFailed as exc:
                outcome.error = str(exc)
                return outcome
            outcome.calls += 1
            vectors_store(
                outcome.model,
                [(entry_id, text, v) for (entry_id, text), v in zip(missing, vectors, strict=True)],
            )
            outcome.embedded += len(missing)
        outcome.more = bool(entries_missing(outcome.model, limit=1))
        return outcome
    finally:
        fill_release(outcome.model, embedded=outcome.embedded)


def recall_embeddings_fill_task() -> str:
    """Worker entry point: one run of the fill; queues the next while entries remain."""
    outcome = recall_embeddings_fill()
    summary = outcome.summary() + ("; the next run is queued" if outcome.more else "")
    if outcome.error:
        logger.warning("%s", summary)
    else:
        logger.info("%s", summary)
    if outcome.more:
        recall_embeddings_fill_request()
    return summary


def recall_embeddings_fill_request() -> None:
    """Queue a run of the fill on the workers, once the current transaction commits."""

    def enqueue() -> None:
        from django_q.tasks import async_task

        async_task(TASK)

    transaction.on_commit(enqueue)


def _embed_for_recall(
    texts: Sequence[str], *, model: str, purpose: str, agent_id: int | None = None
) -> list[list[float]]:
    return embed_texts(texts, model_name=model, query=purpose == "query", agent_id=agent_id)


def install() -> None:
    """Give recall its provider embeddings (llm's AppConfig.ready)."""
    provider_embedder_install(Embedder(embed=_embed_for_recall, request_fill=recall_embeddings_fill_request))
