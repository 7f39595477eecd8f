"""Claude through the real anthropic SDK against the fake server's Messages API: an agent's turn, the
prompt-cache breakpoints two turns share, the reply schema as a forced tool, media blocks, usage,
prices with cache rates, and errors mapped as the other providers' are."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from conversations.models import TaskGraph
from llm.calls import call_llm
from llm.errors import LLMConfigError, LLMPermanentError, LLMTransientError, ModelNotFound
from llm.failover import call_llm_chain
from llm.models import LLMCall, RouteBreaker
from llm.planning import plan_turn
from llm.providers import provider_for
from llm.providers.anthropic import reply_tool
from llm.providers.schema import json_schema
from llm.request import LLMRequest, Part, Turn, Usage
from llm.routing import Route
from llm.task_schema import task_list_schema
from llm.tests.conftest import add_message
from llm.translation import TRANSLATION_SCHEMA
from llm.usage import estimate_cost

SONNET = Route("anthropic", "claude-sonnet-4-6")
EPHEMERAL = {"type": "ephemeral"}


def _request(*, schema=True, system="You are Wendy.") -> LLMRequest:
    return LLMRequest(
        system=system,
        turns=[
            Turn("user", (Part(text="[message_id 1 · from Alice]"), Part(text="hi"))),
            Turn("agent", (Part(text="hello!"),)),
            Turn("user", (Part(text="Consider responding to message with message_id 1."),)),
        ],
        response_schema=task_list_schema() if schema else None,
        stable_turns=2,
    )


def _plan(node):
    return plan_turn(node_id=node.pk, sleep=lambda seconds: None)


def _breakpoints(body) -> list[str]:
    """Where the request's cache breakpoints are: "system", or "message N block M"."""
    found = [f"system {i}" for i, block in enumerate(body.get("system") or []) if "cache_control" in block]
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append(f"message {m} block {b}")
    return found


def _without_breakpoints(messages):
    return [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
        for m in messages
    ]


@pytest.fixture
def claude_agent(dm):
    dm.agent.llm = "claude-haiku-4-5"
    dm.agent.save()
    return dm.agent


def test_an_anthropic_agents_turn_goes_through_the_messages_api(claude_agent, dm, fake_llm, make_node, clock):
    add_message(dm, 5, "Do you have rye?")
    fake_llm.reply_with(json.dumps([{"kind": "send", "text": "Yes! 🍞", "reply_to": 5}]), output_tokens=12)

    result = _plan(make_node(dm, target=5))

    assert [(t.kind, t.params) for t in result.tasks] == [("send", {"text": "Yes! 🍞", "reply_to": 5})]
    (request,) = fake_llm.requests_to("anthropic")
    body = request.json
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer test"
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 8192
    assert "You are Wendy, a cheerful baker." in body["system"][0]["text"]
    assert body["tool_choice"] == {"type": "tool", "name": "reply"}
    (tool,) = body["tools"]
    tasks = tool["input_schema"]["properties"]["tasks"]
    assert tool["input_schema"]["required"] == ["tasks"] and tasks["type"] == "array"
    assert "send" in tasks["items"]["properties"]["kind"]["enum"]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][-1]["content"][-1]["text"].endswith(
        "Consider responding to message with message_id 5."
    )
    call = LLMCall.objects.get(pk=result.llm_call_ids[0])
    assert (call.provider, call.model, call.status, call.output_tokens) == (
        "anthropic",
        "claude-haiku-4-5",
        "ok",
        12,
    )


def test_two_consecutive_turns_share_the_cached_stable_prefix(claude_agent, dm, fake_llm, make_node, clock):
    add_message(dm, 5, "Do you have rye?")
    fake_llm.reply_with(json.dumps([{"kind": "send", "text": "Yes!"}]))
    first = _plan(make_node(dm, target=5))
    TaskGraph.objects.filter(conversation=dm).update(active_slot=None)  # the turn before is over
    add_message(dm, 6, "Yes!", is_agent=True)
    add_message(dm, 7, "Great, I'll take two.")
    fake_llm.reply_with(json.dumps([{"kind": "send", "text": "See you soon."}]))
    second = _plan(make_node(dm, target=7))

    one, two = (r.json for r in fake_llm.requests_to("anthropic"))
    # The system block and the end of the history carry the breakpoints; the final turn is after them.
    assert _breakpoints(one) == ["system 0", "message 0 block 0"]
    assert one["system"][0]["cache_control"] == EPHEMERAL
    assert _breakpoints(two) == ["system 0", "message 2 block 0"]
    # The second request starts with everything the first cached: tools, system, the first history.
    assert (two["tools"], two["system"]) == (one["tools"], one["system"])
    stable_one = _without_breakpoints(one["messages"])[0]["content"][:1]
    assert stable_one[0]["text"].endswith("Do you have rye?")
    assert _without_breakpoints(two["messages"])[0]["content"][:1] == stable_one
    assert [m["role"] for m in two["messages"]] == ["user", "assistant", "user"]
    # So the second turn reads what the first wrote, and writes only what the history added.
    call_one = LLMCall.objects.get(pk=first.llm_call_ids[0])
    call_two = LLMCall.objects.get(pk=second.llm_call_ids[0])
    assert call_one.cached_tokens == 0 and call_one.cache_write_tokens > 0
    assert call_two.cached_tokens == call_one.cache_write_tokens
    assert 0 < call_two.cache_write_tokens < call_one.cache_write_tokens
    assert call_two.input_tokens == 10 + call_two.cached_tokens + call_two.cache_write_tokens


def test_a_history_that_starts_with_the_agent_opens_with_a_user_message(fake_llm, db):
    request = LLMRequest(
        system="You are Wendy.",
        turns=[Turn("agent", (Part(text="Morning!"),)), Turn("user", (Part(text="now"),))],
        stable_turns=1,
    )

    call_llm(request, route=SONNET)

    messages = fake_llm.last_json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [{"type": "text", "text": "Morning!", "cache_control": EPHEMERAL}]


def test_the_reply_schema_is_a_forced_tool_in_json_schema():
    tool = reply_tool(task_list_schema(["send", "react"]))
    items = tool["input_schema"]["properties"]["tasks"]["items"]

    assert items["type"] == "object" and items["required"] == ["kind"]
    assert items["properties"]["kind"] == {"type": "string", "enum": ["send", "react"]}
    assert items["properties"]["reply_to"] == {"type": ["integer", "null"]}
    assert "propertyOrdering" not in json.dumps(tool)
    # A schema already in JSON Schema with an object root is the tool's input as it is.
    assert json_schema(TRANSLATION_SCHEMA) == TRANSLATION_SCHEMA
    assert reply_tool(TRANSLATION_SCHEMA)["input_schema"] == TRANSLATION_SCHEMA


def test_an_object_reply_is_the_tool_input_and_free_text_is_a_text_block(fake_llm, db):
    answer = {"translations": [{"id": "1", "text": "Bonjour"}]}
    fake_llm.reply_with(json.dumps(answer))
    fake_llm.reply_with("A loaf of rye on a table.")
    request = LLMRequest(system="Translate.", turns=[Turn("user", (Part(text="Hello"),))])
    request.response_schema = TRANSLATION_SCHEMA

    translated = call_llm(request, route=SONNET)
    described = call_llm(_request(schema=False), route=SONNET)

    assert json.loads(translated.text) == answer and translated.finish_reason == "tool_use"
    assert (described.text, described.finish_reason) == ("A loaf of rye on a table.", "end_turn")
    assert "tools" not in fake_llm.requests[1].json


def test_images_and_documents_are_base64_blocks_and_audio_is_refused(fake_llm, db):
    provider = provider_for("anthropic")
    request = LLMRequest(
        system="Describe.",
        turns=[
            Turn(
                "user",
                (
                    Part(text="Describe these."),
                    Part(data=b"\x89PNG", mime="image/png"),
                    Part(data=b"%PDF-1.4", mime="application/pdf"),
                    Part(data=b"rye notes", mime="text/plain"),
                ),
            )
        ],
    )

    call_llm(request, route=SONNET)

    blocks = fake_llm.last_json["messages"][0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
    }
    assert blocks[2]["type"] == "document" and blocks[2]["source"]["media_type"] == "application/pdf"
    assert blocks[3] == {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "rye notes"},
    }
    assert provider.supports_media("image/webp") and not provider.supports_media("audio/ogg")
    voice = LLMRequest(system="", turns=[Turn("user", (Part(data=b"OggS", mime="audio/ogg"),))])
    with pytest.raises(LLMPermanentError, match="do not take audio/ogg input"):
        call_llm(voice, route=SONNET)
    assert len(fake_llm.requests_to("anthropic")) == 1


def test_usage_and_cost_count_cache_reads_and_writes_at_their_rates(fake_llm, db):
    # No system and no stable turns: no breakpoints, so the stand-in cache adds nothing to the script.
    request = LLMRequest(system="", turns=[Turn("user", (Part(text="hi"),))])
    fake_llm.reply_with("[]", input_tokens=200, cached_tokens=1000, cache_write_tokens=300, output_tokens=50)

    reply = call_llm(request, route=SONNET)

    call = LLMCall.objects.get(pk=reply.llm_call_id)
    assert (call.input_tokens, call.cached_tokens, call.cache_write_tokens, call.output_tokens) == (
        1500,
        1000,
        300,
        50,
    )
    # 200 fresh at 3.00 + 1000 read at 0.30 + 300 written at 3.75 + 50 output at 15.00, per million
    assert call.cost == Decimal("0.002775")


@pytest.mark.parametrize(
    ("model", "cost"),
    [
        ("claude-opus-4-5-20251101", "0.011250"),  # 1000 x 5.00 + 1000 x 6.25
        ("claude-opus-4-1-20250805", "0.033750"),  # 1000 x 15.00 + 1000 x 18.75
        ("claude-opus-4-20250514", "0.033750"),
        ("claude-sonnet-4-20250514", "0.006750"),
        ("claude-haiku-4-5", "0.002250"),
    ],
)
def test_each_claude_family_has_its_price_with_a_cache_write_rate(db, model, cost):
    usage = Usage(input_tokens=2000, cache_write_tokens=1000)

    assert estimate_cost("anthropic", model, usage) == Decimal(cost)


def test_a_price_without_a_cache_write_rate_bills_writes_as_input(db):
    usage = Usage(input_tokens=2000, cache_write_tokens=1000)

    # gpt-4o: 2000 x 2.50, whatever part was written to a cache
    assert estimate_cost("openai", "gpt-4o", usage) == Decimal("0.005000")


@pytest.mark.parametrize("status", [429, 500, 503, 529])
def test_busy_and_failing_answers_are_retried_then_transient(fake_llm, db, status):
    sleeps: list[float] = []
    fake_llm.fail_next(status, times=2)
    fake_llm.reply_with("[]")

    assert call_llm(_request(), route=SONNET, sleep=sleeps.append).status == "ok"
    assert len(sleeps) == 2

    fake_llm.fail_next(status, times=3, retry_after=7)
    with pytest.raises(LLMTransientError, match="failed 3 times") as raised:
        call_llm(_request(), route=SONNET, sleep=sleeps.append, max_retries=2)
    assert raised.value.retry_after == 7


@pytest.mark.parametrize(
    ("status", "error", "match"),
    [
        (404, ModelNotFound, "no such model"),
        (401, LLMConfigError, "ANTHROPIC_API_KEY"),
        (403, LLMConfigError, "ANTHROPIC_API_KEY"),
        (400, LLMPermanentError, "anthropic answered 400"),
        (413, LLMPermanentError, "anthropic answered 413"),
    ],
)
def test_refusals_map_to_the_same_errors_as_other_providers(fake_llm, db, status, error, match):
    fake_llm.fail_next(status, message="nope")

    with pytest.raises(error, match=match):
        call_llm(_request(), route=SONNET, sleep=lambda seconds: None)

    assert len(fake_llm.requests) == 1


def test_an_overloaded_claude_fails_over_and_opens_its_breaker_for_the_retry_after(fake_llm, db, settings):
    settings.CINDY_LLM_BREAKER_FAILURES = 1
    fake_llm.fail_next(529, retry_after=120)
    fake_llm.reply_with("[]")

    chain = call_llm_chain(_request(), routes=[SONNET, Route("grok", "grok-4")], sleep=lambda seconds: None)

    assert chain.route.provider == "grok" and chain.answered_by.startswith("grok/grok-4 (fallback after")
    breaker = RouteBreaker.objects.get(provider="anthropic")
    assert breaker.state == RouteBreaker.State.OPEN
    assert (breaker.open_until - breaker.changed).total_seconds() == 120


def test_a_timeout_is_retried(fake_llm, db, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.3
    fake_llm.stall_next(5)
    fake_llm.reply_with("[]")
    sleeps: list[float] = []

    assert call_llm(_request(), route=SONNET, sleep=sleeps.append).status == "ok"
    assert len(fake_llm.requests) == 2 and len(sleeps) == 1


def test_refused_and_empty_replies_are_recorded_not_raised(fake_llm, db):
    fake_llm.reply_with("x", blocked=True)
    fake_llm.reply_with(None)

    blocked = call_llm(_request(), route=SONNET)
    empty = call_llm(_request(), route=SONNET)

    assert (blocked.status, blocked.finish_reason, empty.status) == ("blocked", "refusal", "empty")
    assert sorted(LLMCall.objects.values_list("status", flat=True)) == ["blocked", "empty"]


def test_a_missing_key_names_the_variable(fake_llm, db, settings):
    settings.ANTHROPIC_API_KEY = ""

    with pytest.raises(LLMConfigError, match="ANTHROPIC_API_KEY is not set"):
        call_llm(_request(), route=SONNET)


@pytest.mark.parametrize("body", ["not json", '{"type": "message", "content": "x"}', "[" * 100_000])
def test_an_unreadable_reply_fails_once_without_another_paid_call(fake_llm, db, body):
    fake_llm.raw_next(body)

    with pytest.raises(LLMPermanentError, match="anthropic/claude-sonnet-4-6"):
        call_llm(_request(), route=SONNET, sleep=lambda seconds: None)

    assert len(fake_llm.requests) == 1
    assert LLMCall.objects.get().status == "error"
