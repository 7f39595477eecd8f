"""Gemini explicit caching of a busy conversation's stable prefix, through the real google-genai SDK
against the LLM stand-in: when a cache is made, that it is reused from the rows, and what happens when
the provider no longer has it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cindy_site.parameters import parameter
from llm.calls import call_llm
from llm.explicit_cache import min_cache_tokens
from llm.models import ExplicitCache, LLMCall
from llm.planning import plan_turn
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route
from llm.usage import price_for

ROUTE = Route("gemini", "gemini-3-flash-preview")
#: About 2,500 tokens of persona at 4 characters a token: above the model's minimum.
PERSONA = "You are Wendy, a cheerful baker who answers warmly and briefly. " * 160


def _request(
    messages: int, *, system: str = PERSONA, final: str = "Reply to the last message."
) -> LLMRequest:
    """A planning request of a conversation `messages` long: the history, then the turn's final text."""
    history = [
        Turn("agent" if i % 2 else "user", (Part(text=f"message {i}: how is the sourdough today?"),))
        for i in range(messages)
    ]
    return LLMRequest(
        system=system,
        turns=[*history, Turn("user", (Part(text=final),))],
        response_schema={"type": "array", "items": {"type": "object"}},
        stable_turns=len(history),
    )


@pytest.fixture
def busy(settings, fake_llm, dm, clock):
    """Explicit caching on from the 3rd planning turn of an hour; replies that miss the implicit cache."""
    settings.CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR = 3
    settings.CINDY_EXPLICIT_CACHE_TTL_SECONDS = 3600
    fake_llm.set_default_reply("[]", input_tokens=40, output_tokens=5)
    return fake_llm


def _turn(dm, messages: int, clock, **kwargs) -> LLMCall:
    clock.advance(60)
    reply = call_llm(
        _request(messages, **kwargs),
        route=ROUTE,
        agent_id=dm.agent_id,
        conversation_id=dm.pk,
        sleep=lambda s: None,
    )
    return LLMCall.objects.get(pk=reply.llm_call_id)


@pytest.fixture
def by_default(fake_llm, dm, clock):
    """The shipped setting (CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR unset); replies that miss the implicit
    cache."""
    assert parameter("CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR") == 5
    fake_llm.set_default_reply("[]", input_tokens=40, output_tokens=5)
    return fake_llm


def test_by_default_a_chat_with_five_turns_in_an_hour_gets_a_cache_from_its_fifth(by_default, dm, clock):
    calls = [_turn(dm, n, clock) for n in range(4, 11)]  # a turn a minute

    [row] = ExplicitCache.objects.all()
    assert [c.explicit_cache for c in calls] == [False] * 4 + [True] * 3
    assert row.prefix_turns == 8  # the fifth turn's history
    assert {c.cached_tokens for c in calls[4:]} == {row.tokens}


def test_by_default_a_chat_with_four_turns_an_hour_never_gets_a_cache(by_default, dm, clock):
    for n in range(4, 16):  # three hours, a turn every 15 minutes and a second: at most four an hour
        clock.advance(14 * 60 + 1)
        _turn(dm, n, clock)

    assert by_default.requests_to("cache-create") == []
    assert len(by_default.requests_to("generate")) == 12
    assert not ExplicitCache.objects.exists()
    assert not LLMCall.objects.filter(explicit_cache=True).exists()


def test_by_default_a_busy_chat_on_a_provider_without_explicit_caches_is_sent_as_usual(by_default, dm, clock):
    route = Route("grok", "grok-4-fast")
    for n in range(4, 12):
        clock.advance(60)
        call_llm(_request(n), route=route, agent_id=dm.agent_id, conversation_id=dm.pk, sleep=lambda s: None)

    assert by_default.requests_to("cache-create") == []
    assert not ExplicitCache.objects.exists()
    calls = LLMCall.objects.filter(conversation_id=dm.pk)
    assert calls.count() == 8 and not calls.filter(explicit_cache=True).exists()


def test_below_the_turns_per_hour_no_cache_is_made(busy, dm, clock):
    calls = [_turn(dm, n, clock) for n in (4, 5)]

    assert busy.requests_to("cache-create") == []
    assert all("cachedContent" not in r.json for r in busy.requests_to("generate"))
    assert [c.explicit_cache for c in calls] == [False, False]
    assert ExplicitCache.objects.count() == 0


def test_with_the_setting_at_zero_a_busy_conversation_gets_no_cache(busy, dm, clock, settings):
    settings.CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR = 0
    for n in range(4, 10):
        _turn(dm, n, clock)
    assert busy.requests_to("cache-create") == []


def test_a_busy_conversation_missing_the_implicit_cache_gets_one_cache_reused_by_later_turns(busy, dm, clock):
    calls = [_turn(dm, n, clock) for n in range(4, 10)]  # six turns, each one message longer

    [create] = busy.requests_to("cache-create")
    [row] = ExplicitCache.objects.all()
    assert create.json["model"] == f"models/{ROUTE.model}"
    assert create.json["systemInstruction"]["parts"][0]["text"] == PERSONA
    assert len(create.json["contents"]) == row.prefix_turns == 6  # the third turn's history
    assert create.json["ttl"] == "3600s"
    generates = busy.requests_to("generate")
    assert [r.json.get("cachedContent") for r in generates] == [None, None] + [row.name] * 4
    for request, messages in zip(generates[2:], range(6, 10), strict=True):
        # Only what follows the cached prefix is sent, and never the system instruction.
        assert len(request.json["contents"]) == messages + 1 - row.prefix_turns
        assert "systemInstruction" not in request.json
    assert [c.explicit_cache for c in calls] == [False, False, True, True, True, True]
    assert {c.cached_tokens for c in calls[2:]} == {row.tokens} and row.tokens > min_cache_tokens(ROUTE.model)


def test_a_call_through_the_cache_is_billed_at_the_cached_rate_and_the_cache_costs_its_storage(
    busy, dm, clock
):
    calls = [_turn(dm, n, clock) for n in (4, 5, 6)]
    row = ExplicitCache.objects.get()
    price = price_for("gemini", ROUTE.model)
    million = Decimal(1_000_000)

    call = calls[-1]
    assert (call.input_tokens, call.cached_tokens) == (40 + row.tokens, row.tokens)
    expected = (
        Decimal(40) * price.input_per_million
        + Decimal(row.tokens) * price.cached_input_per_million
        + Decimal(5) * price.output_per_million
    ) / million
    assert call.cost == expected.quantize(Decimal("0.000001"))
    [made] = LLMCall.objects.filter(purpose=LLMCall.Purpose.CACHE)
    # Its tokens once at the input price, and an hour of storage.
    storage = Decimal(row.tokens) * (price.input_per_million + price.cache_storage_per_million_hour) / million
    assert price.cache_storage_per_million_hour > 0
    assert made.cost == storage.quantize(Decimal("0.000001"))
    assert (made.input_tokens, made.cached_tokens, made.explicit_cache) == (0, 0, True)


def test_a_conversation_the_implicit_cache_serves_gets_no_explicit_cache(busy, dm, clock):
    busy.set_default_reply("[]", input_tokens=3000, cached_tokens=2800, output_tokens=5)
    for n in range(4, 9):
        _turn(dm, n, clock)
    assert busy.requests_to("cache-create") == []


def test_a_prefix_below_the_models_minimum_is_never_cached(busy, dm, clock):
    for n in range(4, 9):
        _turn(dm, n, clock, system="You are Wendy.")
    assert busy.requests_to("cache-create") == []


def test_an_expired_cache_falls_back_without_failing_the_turn_and_a_new_one_is_made(busy, dm, clock):
    for n in (4, 5, 6):
        _turn(dm, n, clock)
    first = ExplicitCache.objects.get()
    busy.expire_caches()

    fallback = _turn(dm, 7, clock)

    assert (fallback.status, fallback.explicit_cache, fallback.cached_tokens) == ("ok", False, 0)
    refused, resent = busy.requests_to("generate")[-2:]
    assert refused.json["cachedContent"] == first.name and "cachedContent" not in resent.json
    assert len(resent.json["contents"]) == 8 and resent.json["systemInstruction"]
    assert not ExplicitCache.objects.exists()

    again = _turn(dm, 8, clock)

    assert len(busy.requests_to("cache-create")) == 2
    second = ExplicitCache.objects.get()
    assert second.name != first.name and again.explicit_cache
    assert busy.requests_to("generate")[-1].json["cachedContent"] == second.name


def test_a_cache_past_half_its_ttl_is_extended_and_the_extra_storage_recorded(busy, dm, clock):
    for n in (4, 5, 6):
        _turn(dm, n, clock)
    row = ExplicitCache.objects.get()
    clock.advance(40 * 60)

    call = _turn(dm, 7, clock)

    [update] = busy.requests_to("cache-update")
    assert update.method == "PATCH" and update.path.endswith(row.name) and update.json["ttl"] == "3600s"
    row.refresh_from_db()
    assert row.expires_at == clock.now() + dt.timedelta(hours=1)
    assert call.explicit_cache
    assert LLMCall.objects.filter(purpose=LLMCall.Purpose.CACHE).count() == 2


def test_a_new_history_start_makes_a_new_cache_and_deletes_the_old_one(busy, dm, clock):
    for n in (4, 5, 6):
        _turn(dm, n, clock)
    old = ExplicitCache.objects.get()

    _turn(dm, 7, clock, system=PERSONA + "\n# Conversation Summary\nThey talked about bread.")

    assert len(busy.requests_to("cache-create")) == 2
    [delete] = busy.requests_to("cache-delete")
    assert delete.path.endswith(old.name)
    assert old.name not in busy.caches
    assert ExplicitCache.objects.get().name != old.name


def test_a_refused_cache_leaves_the_turn_uncached(busy, dm, clock):
    _turn(dm, 4, clock)
    _turn(dm, 5, clock)
    busy.fail_next(
        400, message="Cached content is too small. total_token_count=900, min_total_token_count=1024"
    )

    call = _turn(dm, 6, clock)

    assert (call.status, call.explicit_cache) == ("ok", False)
    assert not ExplicitCache.objects.exists()


def test_a_planning_turn_caches_its_system_instruction_and_history(busy, dm, clock, settings, make_node, say):
    settings.CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR = 1
    dm.agent.instructions = PERSONA
    dm.agent.save()
    for message_id in range(1, 6):
        say(dm, message_id, f"Is the rye loaf ready yet? ({message_id})")

    plan_turn(node_id=make_node(dm, target=5).pk, sleep=lambda s: None)

    [create] = busy.requests_to("cache-create")
    [generate] = busy.requests_to("generate")
    assert "(5)" in str(create.json["contents"][-1]) and "(1)" in str(create.json["contents"][0])
    assert PERSONA.strip() in create.json["systemInstruction"]["parts"][0]["text"]
    assert generate.json["cachedContent"] == ExplicitCache.objects.get().name
    # The history is in the cache; the request carries the turn's final instructions only.
    assert len(generate.json["contents"]) == 1 and "(5)" not in str(generate.json["contents"])


def test_a_refused_extension_keeps_using_the_cache_until_it_expires(busy, dm, clock):
    for n in (4, 5, 6):
        _turn(dm, n, clock)
    row = ExplicitCache.objects.get()
    clock.advance(40 * 60)
    busy.fail_next(503)  # the PATCH

    call = _turn(dm, 7, clock)

    assert len(busy.requests_to("cache-update")) == 1
    assert call.explicit_cache and busy.requests_to("generate")[-1].json["cachedContent"] == row.name
    assert ExplicitCache.objects.get().expires_at == row.expires_at


def test_the_lookup_of_a_chat_without_a_cache_is_two_plain_statements(busy, dm, clock):
    """Every Gemini planning call asks; most chats have no cache: the caches read, then the hour's
    planning calls counted and summed, each one statement the ORM does not build (bench/RESULTS.md)."""
    from django.db import connection
    from django.db.models.sql.compiler import SQLCompiler
    from django.test.utils import CaptureQueriesContext

    from llm.explicit_cache import cache_for_request
    from llm.providers import provider_for

    _turn(dm, 4, clock)
    compiled = []
    original = SQLCompiler.execute_sql

    def counting(self, *args, **kwargs):
        compiled.append(self.query.model)
        return original(self, *args, **kwargs)

    SQLCompiler.execute_sql = counting
    try:
        with CaptureQueriesContext(connection) as queries:
            found = cache_for_request(
                _request(5),
                provider=provider_for(ROUTE.provider),
                route=ROUTE,
                agent_id=dm.agent_id,
                conversation_id=dm.pk,
            )
    finally:
        SQLCompiler.execute_sql = original

    assert found is None
    assert len(queries.captured_queries) == 2 and compiled == []


def test_only_the_chats_expired_caches_of_the_model_are_dropped(busy, dm, clock):
    from llm.explicit_cache import cache_for_request
    from llm.providers import provider_for

    at = clock.now()
    expired = ExplicitCache.objects.create(
        conversation=dm,
        model=ROUTE.model,
        prefix_hash="a" * 64,
        prefix_turns=2,
        name="cachedContents/old",
        created=at - dt.timedelta(hours=2),
        expires_at=at - dt.timedelta(minutes=1),
    )
    other_model = ExplicitCache.objects.create(
        conversation=dm,
        model="gemini-2.5-pro",
        prefix_hash="b" * 64,
        prefix_turns=2,
        name="cachedContents/pro",
        created=at - dt.timedelta(hours=2),
        expires_at=at - dt.timedelta(minutes=1),
    )

    found = cache_for_request(
        _request(5),
        provider=provider_for(ROUTE.provider),
        route=ROUTE,
        agent_id=dm.agent_id,
        conversation_id=dm.pk,
    )

    assert found is None
    assert list(ExplicitCache.objects.values_list("pk", flat=True)) == [other_model.pk]
    assert not ExplicitCache.objects.filter(pk=expired.pk).exists()
