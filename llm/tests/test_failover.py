"""Fallback chains: a route that fails in a way another can fix hands the same turn to the next route
at once, through each provider's real SDK against the local wire-format server."""

from __future__ import annotations

import json

import pytest

from llm.errors import LLMConfigError, LLMPermanentError, LLMTransientError, ModelNotFound
from llm.models import LLMCall
from llm.planning import plan_turn
from llm.routing import Route, routes_for
from llm.tests.conftest import add_message

SEND = json.dumps([{"kind": "send", "text": "Fresh rye at noon!"}])
GEMINI = Route("gemini", "gemini-3-flash-preview")
GPT = Route("openai", "gpt-5-mini")


@pytest.fixture
def chained(agent):
    agent.llm_fallback = ["gpt-5-mini"]
    agent.save(update_fields=["llm_fallback"])
    return agent


def _plan(node, sleeps: list[float] | None = None):
    return plan_turn(node_id=node.pk, sleep=(sleeps if sleeps is not None else []).append)


def _calls():
    return list(LLMCall.objects.order_by("pk").values_list("provider", "model", "status"))


@pytest.mark.parametrize("status", [503, 500, 429, 529])
def test_a_failing_route_hands_the_same_turn_to_the_fallback_at_once(
    chained, dm, fake_llm, make_node, status
):
    add_message(dm, 1, "Any rye today?")
    fake_llm.fail_next(status, message="The model is overloaded. Please try again later.")
    fake_llm.reply_with(SEND)
    sleeps: list[float] = []

    result = _plan(make_node(dm, target=1), sleeps)

    assert [t.params["text"] for t in result.tasks] == ["Fresh rye at noon!"]
    assert [r.api for r in fake_llm.requests] == ["gemini", "openai"]
    assert sleeps == []  # no backoff on the failing route: the fallback answers at once
    assert _calls() == [("gemini", GEMINI.model, "error"), ("openai", "gpt-5-mini", "ok")]
    assert str(status) in LLMCall.objects.get(provider="gemini").error
    assert result.llm_call_ids == [LLMCall.objects.get(provider="openai").pk]
    assert result.answered_by == "openai/gpt-5-mini (fallback after gemini/gemini-3-flash-preview failed)"


def test_the_fallback_is_sent_the_same_prompt_in_its_own_wire_format(chained, dm, fake_llm, make_node):
    add_message(dm, 1, "Any rye today?")
    fake_llm.fail_next(503)
    fake_llm.reply_with(SEND)

    _plan(make_node(dm, target=1))

    gemini, openai = fake_llm.requests
    system = "".join(p["text"] for p in gemini.json["systemInstruction"]["parts"])
    last_turn = "".join(p["text"] for p in gemini.json["contents"][-1]["parts"])
    messages = openai.json["messages"]
    assert messages[0] == {"role": "system", "content": system}
    assert messages[-1]["role"] == "user" and messages[-1]["content"] == last_turn
    assert openai.model == "gpt-5-mini"


def test_a_model_the_provider_does_not_have_fails_over(chained, dm, fake_llm, make_node):
    add_message(dm, 1, "hi")
    fake_llm.fail_next(404, message="models/gemini-3-flash-preview is not found for API version v1beta")
    fake_llm.reply_with(SEND)

    result = _plan(make_node(dm, target=1))

    assert result.answered_by.startswith("openai/gpt-5-mini (fallback after")
    assert "no such model" in LLMCall.objects.get(provider="gemini").error


def test_a_connection_error_fails_over(chained, dm, fake_llm, make_node, settings):
    settings.GEMINI_BASE_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    add_message(dm, 1, "hi")
    fake_llm.reply_with(SEND)

    result = _plan(make_node(dm, target=1))

    assert [r.api for r in fake_llm.requests] == ["openai"]
    assert result.answered_by.startswith("openai/gpt-5-mini")
    assert "request failed" in LLMCall.objects.get(provider="gemini").error


def test_a_safety_refusal_does_not_fail_over(chained, dm, fake_llm, make_node):
    add_message(dm, 1, "hi")
    fake_llm.reply_with(None, blocked=True)

    result = _plan(make_node(dm, target=1))

    assert result.tasks == [] and "blocked" in result.errors[0]
    assert [r.api for r in fake_llm.requests] == ["gemini"]
    assert _calls() == [("gemini", GEMINI.model, "blocked")]


def test_a_reply_the_sdk_cannot_read_does_not_fail_over(chained, dm, fake_llm, make_node):
    add_message(dm, 1, "hi")
    fake_llm.raw_next("this is not JSON")

    with pytest.raises(LLMPermanentError, match="not the JSON the SDK expects"):
        _plan(make_node(dm, target=1))

    assert [r.api for r in fake_llm.requests] == ["gemini"]


def test_a_refused_key_does_not_fail_over(chained, dm, fake_llm, make_node):
    add_message(dm, 1, "hi")
    fake_llm.fail_next(401)

    with pytest.raises(LLMConfigError, match="GOOGLE_GEMINI_API_KEY"):
        _plan(make_node(dm, target=1))

    assert len(fake_llm.requests) == 1


def test_a_fallback_without_its_key_is_passed_over_and_the_turn_waits(
    chained, dm, fake_llm, make_node, settings
):
    settings.OPENAI_API_KEY = ""
    add_message(dm, 1, "hi")
    fake_llm.fail_next(503)

    with pytest.raises(LLMTransientError) as raised:
        _plan(make_node(dm, target=1))

    assert [r.api for r in fake_llm.requests] == ["gemini"]  # no request without a key
    message = str(raised.value)
    assert message.startswith("every route of the LLM fallback chain failed: gemini/gemini-3-flash-preview:")
    assert "openai/gpt-5-mini: " in message and "OPENAI_API_KEY" in message


def test_the_last_route_keeps_its_retries_and_the_error_names_every_route(
    chained, dm, fake_llm, make_node, settings
):
    settings.LLM_MAX_RETRIES = 2
    add_message(dm, 1, "hi")
    fake_llm.fail_next(503, times=4)
    sleeps: list[float] = []

    with pytest.raises(LLMTransientError) as raised:
        _plan(make_node(dm, target=1), sleeps)

    assert [r.api for r in fake_llm.requests] == ["gemini", "openai", "openai", "openai"]
    assert len(sleeps) == 2
    message = str(raised.value)
    assert message.startswith("every route of the LLM fallback chain failed: gemini/gemini-3-flash-preview:")
    assert "openai/gpt-5-mini: openai/gpt-5-mini failed 3 times" in message
    assert [s for *_, s in _calls()] == ["error", "error"]


def test_no_route_having_the_model_is_a_permanent_failure(chained, dm, fake_llm, make_node):
    add_message(dm, 1, "hi")
    fake_llm.fail_next(404, times=2)

    with pytest.raises(ModelNotFound, match="every route of the LLM fallback chain failed"):
        _plan(make_node(dm, target=1))


def test_without_a_chain_a_failing_route_retries_as_before(agent, dm, fake_llm, make_node, settings):
    settings.LLM_MAX_RETRIES = 1
    add_message(dm, 1, "hi")
    fake_llm.fail_next(503)
    fake_llm.reply_with(SEND)

    result = _plan(make_node(dm, target=1))

    assert [r.api for r in fake_llm.requests] == ["gemini", "gemini"]
    assert result.answered_by == "gemini/gemini-3-flash-preview"


def test_the_site_chain_serves_agents_whose_persona_lists_none(settings, fake_llm):
    settings.CINDY_LLM_FALLBACK = ["grok", " openrouter:anthropic/claude-sonnet-4.5 "]
    assert routes_for(agent_llm="gemini") == [
        GEMINI,
        Route("grok", "grok-4-fast-non-reasoning"),
        Route("openrouter", "anthropic/claude-sonnet-4.5"),
    ]
    assert routes_for(agent_llm="gemini", agent_fallback=["gpt"]) == [GEMINI, GPT]


def test_a_conversation_override_keeps_the_chain_and_no_route_is_tried_twice(fake_llm):
    assert routes_for(
        agent_llm="gemini", conversation_llm="gpt-5-mini", agent_fallback=["gpt", "gemini"]
    ) == [
        GPT,
        GEMINI,
    ]


def test_the_chain_is_honoured_for_a_conversation_override(chained, dm, fake_llm, make_node):
    dm.llm_model = "grok"
    dm.save(update_fields=["llm_model"])
    add_message(dm, 1, "hi")
    fake_llm.fail_next(503)
    fake_llm.reply_with(SEND)

    result = _plan(make_node(dm, target=1))

    assert [r.model for r in fake_llm.requests] == ["grok-4-fast-non-reasoning", "gpt-5-mini"]
    assert result.answered_by.startswith("openai/gpt-5-mini (fallback after grok/")
