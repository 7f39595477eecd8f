"""Circuit breakers per route, shared through the database: open after repeated failures, skipped
for the cool-down (or the provider's Retry-After), probed by one turn, closed by its success."""

from __future__ import annotations

import json

import pytest

from conversations.models import TaskGraph
from llm.breakers import breaker_admits, breaker_failure, breakers_of
from llm.errors import LLMTransientError
from llm.models import RouteBreaker
from llm.planning import plan_turn
from llm.routing import Route
from llm.tests.conftest import add_message

SEND = json.dumps([{"kind": "send", "text": "Back soon!"}])
GEMINI = Route("gemini", "gemini-3-flash-preview")


@pytest.fixture
def chained(agent, settings):
    settings.CINDY_LLM_BREAKER_FAILURES = 2
    settings.CINDY_LLM_BREAKER_COOLDOWN_SECONDS = 60
    agent.llm_fallback = ["gpt-5-mini"]
    agent.save(update_fields=["llm_fallback"])
    return agent


def _turn(dm, make_node, message_id: int):
    TaskGraph.objects.filter(conversation=dm).update(active_slot=None)  # the turn before is over
    add_message(dm, message_id, "hello?")
    return plan_turn(node_id=make_node(dm, target=message_id).pk, sleep=lambda seconds: None)


def _apis(fake_llm) -> list[str]:
    apis = [r.api for r in fake_llm.requests]
    fake_llm.requests.clear()
    return apis


def _breaker() -> RouteBreaker:
    return RouteBreaker.objects.get(provider="gemini")


def test_the_breaker_opens_after_repeated_failures_and_turns_skip_the_route(
    chained, dm, fake_llm, make_node, clock
):
    for message_id in (1, 2):
        fake_llm.fail_next(503)
        fake_llm.reply_with(SEND)
        _turn(dm, make_node, message_id)
    assert _apis(fake_llm) == ["gemini", "openai", "gemini", "openai"]
    assert (_breaker().state, _breaker().failures) == ("open", 2)

    fake_llm.reply_with(SEND)
    result = _turn(dm, make_node, 3)

    assert _apis(fake_llm) == ["openai"]  # no request to the open route
    assert result.answered_by == ("openai/gpt-5-mini (fallback after gemini/gemini-3-flash-preview failed)")


def test_after_the_cool_down_one_turn_probes_and_its_success_closes_the_breaker(
    chained, dm, fake_llm, make_node, clock
):
    breaker_failure(GEMINI, error="503")
    breaker_failure(GEMINI, error="503")
    clock.advance(61)
    fake_llm.reply_with(SEND)

    result = _turn(dm, make_node, 1)

    assert result.answered_by == "gemini/gemini-3-flash-preview"
    assert (_breaker().state, _breaker().failures, _breaker().open_until) == ("closed", 0, None)


def test_a_failed_probe_opens_the_breaker_for_another_cool_down(chained, dm, fake_llm, make_node, clock):
    breaker_failure(GEMINI, error="503")
    breaker_failure(GEMINI, error="503")
    clock.advance(61)
    fake_llm.fail_next(503)
    fake_llm.reply_with(SEND)

    _turn(dm, make_node, 1)

    breaker = _breaker()
    assert breaker.state == "open"
    assert 59 <= (breaker.open_until - clock.now()).total_seconds() <= 60


def test_the_providers_retry_after_keeps_the_route_closed_longer(chained, dm, fake_llm, make_node, clock):
    for message_id in (1, 2):
        fake_llm.fail_next(429, retry_after=300)
        fake_llm.reply_with(SEND)
        _turn(dm, make_node, message_id)

    assert 299 <= (_breaker().open_until - clock.now()).total_seconds() <= 300
    clock.advance(120)  # past the 60 s cool-down, not past Retry-After
    fake_llm.clear()
    fake_llm.reply_with(SEND)
    _turn(dm, make_node, 3)
    assert _apis(fake_llm) == ["openai"]


def test_only_one_turn_wins_the_probe(db, settings, clock):
    settings.CINDY_LLM_BREAKER_FAILURES = 1
    breaker_failure(GEMINI, error="503")
    clock.advance(61)
    read_by_two_workers = breakers_of([GEMINI])[GEMINI]

    assert breaker_admits(GEMINI, read_by_two_workers) is True
    assert breaker_admits(GEMINI, read_by_two_workers) is False
    assert breaker_admits(GEMINI, breakers_of([GEMINI])[GEMINI]) is False  # probing
    clock.advance(settings.LLM_TIMEOUT_SECONDS * (settings.LLM_MAX_RETRIES + 1) + 1)
    assert breaker_admits(GEMINI, breakers_of([GEMINI])[GEMINI]) is True  # the probe was lost


def test_an_agent_whose_only_route_is_open_waits_without_a_request(
    agent, dm, fake_llm, make_node, settings, clock
):
    settings.CINDY_LLM_BREAKER_FAILURES = 1
    breaker_failure(GEMINI, error="gemini answered 503", retry_after=90)

    with pytest.raises(LLMTransientError, match="breaker is open until") as raised:
        _turn(dm, make_node, 1)

    assert fake_llm.requests == []
    assert raised.value.retry_after == pytest.approx(90, abs=1)


def test_successes_on_a_healthy_route_write_no_breaker_row(agent, dm, fake_llm, make_node, clock):
    fake_llm.reply_with(SEND)
    _turn(dm, make_node, 1)
    assert not RouteBreaker.objects.exists()
