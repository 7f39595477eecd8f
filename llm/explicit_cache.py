"""Gemini explicit context caching for busy conversations whose calls miss the implicit cache.

Gemini caches a repeated request prefix by itself (implicit caching), but without a guarantee: a
conversation planned many times an hour may still be billed at the full input rate. For such a
conversation the planning call makes an explicit cache of its stable prefix (the system instruction
and the history turns, `LLMRequest.stable_turns`) and sends only the rest, naming the cache. The next
turns of the conversation start with the same prefix (the history only grows at its end until the
window steps or a summary is written), so they use the same cache, from any worker: the cache is an
`ExplicitCache` row keyed on the model and a hash of the prefix.

Costs are recorded as `LLMCall` rows of purpose `cache` (`explicit_cache=True`): when a cache is made,
its tokens at the input price plus their storage for the TTL (`ModelPrice.cache_storage_per_million_hour`);
when it is extended, the storage of the extra time. `llm/cache_share.py` sets them against what the
cached tokens saved.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction

from cindy_site.clock import now
from cindy_site.parameters import parameter
from llm.errors import CacheGone
from llm.models import ExplicitCache
from llm.request import LLMRequest
from llm.routing import Route
from llm.selectors import explicit_caches_of, planning_calls_since
from llm.usage import estimate_input_tokens, llm_cache_cost_record, price_for

if TYPE_CHECKING:  # the SDK is loaded with the provider, on first use
    from llm.providers.gemini import CachedPrefix, GeminiProvider

logger = logging.getLogger(__name__)

#: Below this share of input tokens read from the implicit cache, the conversation's calls "miss" it.
MISS_SHARE = 0.5
#: The window in which planning turns are counted (CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR).
WINDOW = dt.timedelta(hours=1)
#: A cache with less time than this left is not used (the request could arrive after it expired).
MARGIN = dt.timedelta(seconds=60)
#: The smallest prefix Gemini caches explicitly, per model prefix (longest wins; the API refuses a
#: smaller cache with 400 "Cached content is too small"). Models not listed: DEFAULT_MIN_TOKENS.
MIN_TOKENS = {
    "gemini-2.5-flash": 1024,
    "gemini-2.5-flash-lite": 2048,
    "gemini-2.5-pro": 4096,
    "gemini-3-flash": 1024,
    "gemini-3-pro": 4096,
}
DEFAULT_MIN_TOKENS = 4096
_MILLION = Decimal(1_000_000)
_HOUR = Decimal(3600)


def min_cache_tokens(model: str) -> int:
    best = ""
    for prefix in MIN_TOKENS:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return MIN_TOKENS[best] if best else DEFAULT_MIN_TOKENS


def prefix_hash(request: LLMRequest, *, model: str, turns: int) -> str:
    """SHA-256 of the model, the system instruction and the first `turns` turns (text and media)."""
    digest = hashlib.sha256(f"{model}\0".encode())
    digest.update(request.system.encode("utf-8", "surrogatepass"))
    for turn in request.turns[:turns]:
        digest.update(f"\0{turn.role}".encode())
        for part in turn.parts:
            digest.update(b"\1" + part.text.encode("utf-8", "surrogatepass"))
            if part.data is not None:
                digest.update(b"\2" + part.mime.encode() + hashlib.sha256(part.data).digest())
    return digest.hexdigest()


def conversation_misses_implicit_cache(conversation_id: int, *, at: dt.datetime) -> tuple[int, bool]:
    """(planning calls of the conversation in the last hour, whether they miss the implicit cache).

    They miss it when the calls made without an explicit cache read less than MISS_SHARE of their
    input from the cache. When every recent call used an explicit cache there is nothing to judge
    the implicit cache by, and the conversation keeps its explicit one."""
    turns, tokens, cached = planning_calls_since(conversation_id=conversation_id, since=at - WINDOW)
    if not tokens:
        return turns, True
    return turns, cached / tokens < MISS_SHARE


def cache_for_request(
    request: LLMRequest,
    *,
    provider: GeminiProvider,
    route: Route,
    agent_id: int | None,
    conversation_id: int | None,
) -> CachedPrefix | None:
    """The explicit cache a planning request should use, or None (an ordinary request).

    1. Only Gemini planning requests of a conversation, with a history, while
       CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR is above 0.
    2. Forget the conversation's rows that have expired.
    3. A live row whose prefix the request starts with is used; when less than half the TTL is left
       it is extended to a full TTL first (its storage recorded).
    4. Otherwise, when this turn makes at least N planning turns in the last hour, those calls miss
       the implicit cache, and the prefix reaches the model's minimum (MIN_TOKENS, estimated at 4
       characters a token): make a cache of it, record its cost, replace the conversation's older
       caches of that model, and use it.

    A provider error while making or extending a cache is logged and the request goes without one:
    caching never fails a turn.
    """
    from llm.providers.gemini import CachedPrefix

    turns_per_hour = parameter("CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR")
    stable = request.stable_turns
    if not turns_per_hour or route.provider != "gemini" or conversation_id is None or stable < 1:
        return None
    at = now()
    ttl = int(parameter("CINDY_EXPLICIT_CACHE_TTL_SECONDS"))
    rows = explicit_caches_of(conversation_id=conversation_id, model=route.model)
    expired = [row.pk for row in rows if row.expires_at <= at + MARGIN]
    if expired:
        ExplicitCache.objects.filter(pk__in=expired).delete()
    for row in rows:
        if row.pk in expired or row.prefix_turns > stable:
            continue
        if row.prefix_hash != prefix_hash(request, model=route.model, turns=row.prefix_turns):
            continue
        if row.expires_at - at < dt.timedelta(seconds=ttl / 2) and not _extend(
            provider, row, at=at, ttl=ttl, agent_id=agent_id
        ):
            return None  # the provider no longer has it
        return CachedPrefix(name=row.name, turns=row.prefix_turns)
    turns, missing = conversation_misses_implicit_cache(conversation_id, at=at)
    if turns + 1 < turns_per_hour or not missing:
        return None
    prefix = LLMRequest(system=request.system, turns=request.turns[:stable])
    if estimate_input_tokens(prefix) < min_cache_tokens(route.model):
        return None
    row = _make(
        provider,
        request,
        route=route,
        turns=stable,
        ttl=ttl,
        at=at,
        agent_id=agent_id,
        conversation_id=conversation_id,
    )
    return None if row is None else CachedPrefix(name=row.name, turns=row.prefix_turns)


def cache_forget(name: str) -> None:
    """The provider no longer has cache `name`: drop its row (the next busy turn makes a new one)."""
    ExplicitCache.objects.filter(name=name).delete()


def storage_cost(provider: str, model: str, *, tokens: int, seconds: float) -> Decimal:
    """USD for keeping `tokens` in an explicit cache for `seconds`."""
    price = price_for(provider, model)
    if price is None or not price.cache_storage_per_million_hour:
        return Decimal("0")
    cost = Decimal(tokens) * price.cache_storage_per_million_hour * Decimal(str(seconds)) / _HOUR / _MILLION
    return cost.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def _make(
    provider: GeminiProvider,
    request: LLMRequest,
    *,
    route: Route,
    turns: int,
    ttl: int,
    at: dt.datetime,
    agent_id: int | None,
    conversation_id: int,
) -> ExplicitCache | None:
    digest = prefix_hash(request, model=route.model, turns=turns)
    try:
        made = provider.cache_create(request, model=route.model, turns=turns, ttl_seconds=ttl)
    except Exception as exc:  # noqa: BLE001 - caching never fails a turn (network errors included)
        logger.info(
            "conversation %s: no explicit cache made (%s); the request goes without", conversation_id, exc
        )
        return None
    older = list(ExplicitCache.objects.filter(conversation_id=conversation_id, model=route.model))
    try:
        with transaction.atomic():
            row = ExplicitCache.objects.create(
                conversation_id=conversation_id,
                provider=route.provider,
                model=route.model,
                prefix_hash=digest,
                prefix_turns=turns,
                name=made.name,
                tokens=made.tokens,
                created=at,
                expires_at=at + dt.timedelta(seconds=ttl),
            )
    except IntegrityError:
        # Another worker made a cache of the same prefix first: use it and drop this one.
        _delete_quietly(provider, made.name)
        return ExplicitCache.objects.filter(model=route.model, prefix_hash=digest).first()
    price = price_for(route.provider, route.model)
    made_cost = Decimal(made.tokens) * (price.input_per_million if price else Decimal("0")) / _MILLION
    cost = made_cost + storage_cost(route.provider, route.model, tokens=made.tokens, seconds=ttl)
    llm_cache_cost_record(
        provider=route.provider,
        model=route.model,
        agent_id=agent_id,
        conversation_id=conversation_id,
        cost=cost,
        summary=f"made {made.name}: {made.tokens} tokens ({turns} turns) kept {ttl} s",
    )
    for old in older:
        _delete_quietly(provider, old.name)
        old.delete()
    return row


def _extend(
    provider: GeminiProvider, row: ExplicitCache, *, at: dt.datetime, ttl: int, agent_id: int | None
) -> bool:
    """Keep `row`'s cache a full TTL from now; False when the provider no longer has it (the row is
    dropped). A refused extension keeps the cache in use until it expires."""
    try:
        provider.cache_extend(row.name, ttl_seconds=ttl)
    except Exception as exc:  # noqa: BLE001 - caching never fails a turn
        logger.info("explicit cache %s not extended: %s", row.name, exc)
        if isinstance(exc, CacheGone):
            row.delete()
            return False
        return True
    expires = at + dt.timedelta(seconds=ttl)
    added = (expires - row.expires_at).total_seconds()
    ExplicitCache.objects.filter(pk=row.pk).update(expires_at=expires)
    llm_cache_cost_record(
        provider=row.provider,
        model=row.model,
        agent_id=agent_id,
        conversation_id=row.conversation_id,
        cost=storage_cost(row.provider, row.model, tokens=row.tokens, seconds=max(0.0, added)),
        summary=f"extended {row.name} by {added:.0f} s",
    )
    return True


def _delete_quietly(provider: GeminiProvider, name: str) -> None:
    try:
        provider.cache_delete(name)
    except Exception as exc:  # noqa: BLE001 - a cache left behind expires by itself
        logger.info("explicit cache %s not deleted (it expires by itself): %s", name, exc)
