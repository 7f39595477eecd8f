"""The real google-genai and openai SDKs against the fake server: request bodies, usage, errors."""

from __future__ import annotations

import copy

import pytest

from conversations.models import ActivityEvent
from llm.calls import call_llm
from llm.errors import LLMConfigError, LLMTransientError
from llm.models import LLMCall
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route
from llm.task_schema import task_list_schema

GEMINI = Route("gemini", "gemini-3-flash-preview")
GROK = Route("grok", "grok-4-fast-non-reasoning")


def _request(schema=True) -> LLMRequest:
    return LLMRequest(
        system="You are Wendy.",
        turns=[
            Turn("user", (Part(text="[message_id 1 · from Alice]"), Part(text="hi"))),
            Turn("agent", (Part(text="hello!"),)),
            Turn("user", (Part(text="Consider responding to message with message_id 1."),)),
        ],
        response_schema=task_list_schema() if schema else None,
    )


@pytest.fixture
def sleeps():
    return []


def test_gemini_request_has_system_instruction_roles_safety_and_schema(fake_llm, db, sleeps):
    fake_llm.reply_with('[{"kind": "send", "text": "hi"}]')

    reply = call_llm(_request(), route=GEMINI, sleep=sleeps.append)

    assert reply.text == '[{"kind": "send", "text": "hi"}]'
    body = fake_llm.requests[0].json
    assert fake_llm.requests[0].path == "/v1beta/models/gemini-3-flash-preview:generateContent"
    assert body["systemInstruction"]["parts"] == [{"text": "You are Wendy."}]
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert {s["threshold"] for s in body["safetySettings"]} == {"BLOCK_NONE"}
    assert {s["category"] for s in body["safetySettings"]} == {
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
    }
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["type"] == "ARRAY"
    assert "send" in config["responseSchema"]["items"]["properties"]["kind"]["enum"]


def test_gemini_usage_becomes_an_llm_call_row_and_event(fake_llm, db, sleeps):
    fake_llm.reply_with("[]", input_tokens=1200, output_tokens=30, cached_tokens=1000, thinking_tokens=12)

    reply = call_llm(_request(), route=GEMINI, purpose="plan", sleep=sleeps.append)

    call = LLMCall.objects.get(pk=reply.llm_call_id)
    assert (call.provider, call.model, call.status) == ("gemini", "gemini-3-flash-preview", "ok")
    assert (call.input_tokens, call.output_tokens, call.cached_tokens, call.thinking_tokens) == (
        1200,
        30,
        1000,
        12,
    )
    # 200 fresh at 0.50 + 1000 cached at 0.05 + 42 output at 3.00, per million
    assert str(call.cost) == "0.000276"
    event = ActivityEvent.objects.get(kind="llm_call")
    assert event.data["llm_call_id"] == call.pk


def test_grok_request_is_a_system_message_then_user_and_assistant(fake_llm, db, sleeps):
    fake_llm.reply_with("[]", input_tokens=50, output_tokens=4, cached_tokens=40, thinking_tokens=3)

    reply = call_llm(_request(), route=GROK, sleep=sleeps.append)

    request = fake_llm.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test"
    assert request.json["model"] == "grok-4-fast-non-reasoning"
    assert [m["role"] for m in request.json["messages"]] == ["system", "user", "assistant", "user"]
    assert request.json["messages"][1]["content"] == "[message_id 1 · from Alice]\nhi"
    usage = reply.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.thinking_tokens) == (
        50,
        4,
        40,
        3,
    )


@pytest.mark.parametrize("route", [GEMINI, GROK], ids=["gemini", "grok"])
@pytest.mark.parametrize("status", [429, 500])
def test_transient_failures_are_retried_with_growing_backoff(fake_llm, db, sleeps, route, status):
    fake_llm.fail_next(status, times=2)
    fake_llm.reply_with("[]")

    reply = call_llm(_request(), route=route, sleep=sleeps.append)

    assert reply.status == "ok"
    assert len(fake_llm.requests) == 3
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1] <= 30
    assert LLMCall.objects.get().status == "ok"


def test_retries_are_bounded_then_transient_error(fake_llm, db, sleeps):
    fake_llm.fail_next(503, times=10)

    with pytest.raises(LLMTransientError, match="failed 3 times"):
        call_llm(_request(), route=GEMINI, sleep=sleeps.append, max_retries=2)

    assert len(fake_llm.requests) == 3
    assert LLMCall.objects.get().status == "error"


def test_client_errors_are_not_retried(fake_llm, db, sleeps):
    fake_llm.fail_next(400)

    with pytest.raises(Exception, match="400"):
        call_llm(_request(), route=GROK, sleep=sleeps.append)

    assert len(fake_llm.requests) == 1 and sleeps == []


@pytest.mark.parametrize(
    ("route", "variable"),
    [
        (GEMINI, "GOOGLE_GEMINI_API_KEY"),
        (GROK, "GROK_API_KEY"),
        (Route("openai", "gpt-4o-mini"), "OPENAI_API_KEY"),
        (Route("openrouter", "x/y"), "OPENROUTER_API_KEY"),
    ],
)
def test_missing_api_key_names_the_variable(fake_llm, db, settings, route, variable):
    setattr(settings, variable, "")

    with pytest.raises(LLMConfigError, match=f"{variable} is not set"):
        call_llm(_request(), route=route)


def test_refused_key_is_a_config_error(fake_llm, db):
    fake_llm.fail_next(401)

    with pytest.raises(LLMConfigError, match="GROK_API_KEY"):
        call_llm(_request(), route=GROK)


@pytest.mark.parametrize("route", [GEMINI, GROK], ids=["gemini", "grok"])
def test_blocked_and_empty_replies_are_recorded_not_raised(fake_llm, db, route):
    fake_llm.reply_with("x", blocked=True)
    fake_llm.reply_with("")

    blocked = call_llm(_request(), route=route)
    empty = call_llm(_request(), route=route)

    assert (blocked.status, empty.status) == ("blocked", "empty")
    assert sorted(LLMCall.objects.values_list("status", flat=True)) == ["blocked", "empty"]


def test_media_parts_are_sent_inline(fake_llm, db):
    request = LLMRequest(
        system="Describe.",
        turns=[Turn("user", (Part(text="Describe this photo."), Part(data=b"\x89PNG", mime="image/png")))],
    )

    call_llm(request, route=GEMINI)
    call_llm(request, route=Route("openai", "gpt-4o-mini"))

    gemini_parts = fake_llm.requests[0].json["contents"][0]["parts"]
    assert gemini_parts[1]["inlineData"]["data"] == "iVBORw=="
    assert "image/png" in gemini_parts[1]["inlineData"].values()
    openai_content = fake_llm.requests[1].json["messages"][1]["content"]
    assert openai_content[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}


@pytest.mark.parametrize("route", [GEMINI, GROK], ids=["gemini", "grok"])
def test_timeouts_are_retried(fake_llm, db, settings, sleeps, route):
    settings.LLM_TIMEOUT_SECONDS = 0.3
    fake_llm.stall_next(5)
    fake_llm.reply_with("[]")

    reply = call_llm(_request(), route=route, sleep=sleeps.append)

    assert reply.status == "ok"
    assert len(fake_llm.requests) == 2 and len(sleeps) == 1


def _mixed_request() -> LLMRequest:
    request = _request()
    request.turns.append(Turn("user", (Part(text="Describe this."), Part(data=b"\x89PNG", mime="image/png"))))
    return request


def test_gemini_body_matches_the_sdk_own_conversion_of_every_turn(fake_llm):
    from llm.providers.gemini import GeminiProvider, build_config, build_contents

    provider = GeminiProvider(api_key="test", base_url=fake_llm.url)
    request = _mixed_request()
    provider._client.models.generate_content(
        model="m", contents=build_contents(request), config=build_config(request)
    )
    provider.generate(request, model="m")

    sdk_body, sent_body = (r.json for r in fake_llm.requests)
    assert sent_body == sdk_body
    assert len(sent_body["contents"]) == 4


@pytest.mark.parametrize("variant", ["no schema", "audio reply", "explicit cache", "transcript schema"])
def test_gemini_body_matches_the_sdk_own_conversion_without_a_schema_with_modalities_or_a_cache(
    fake_llm, variant
):
    from llm.providers.gemini import CachedPrefix, GeminiProvider, build_config, build_contents

    provider = GeminiProvider(api_key="test", base_url=fake_llm.url)
    request = _mixed_request()
    request.response_schema = None if variant == "no schema" else request.response_schema
    if variant == "transcript schema":  # its properties are sent in its own order, not sorted
        from llm.transcription import TRANSCRIPT_SCHEMA

        request.response_schema = copy.deepcopy(TRANSCRIPT_SCHEMA)
    request.response_modalities = ("AUDIO",) if variant == "audio reply" else None
    cache = None
    sdk_request = request
    if variant == "explicit cache":
        made = provider.cache_create(request, model="m", turns=2, ttl_seconds=600)
        cache = CachedPrefix(name=made.name, turns=2)
        del fake_llm.requests[:]
        sdk_request = LLMRequest(
            system=request.system, turns=request.turns[2:], response_schema=request.response_schema
        )
    for _ in range(2):  # the second call takes the schema's fields from the provider's own copy
        provider._client.models.generate_content(
            model="m",
            contents=build_contents(sdk_request),
            config=build_config(sdk_request, cached_content=cache.name if cache else None),
        )
        provider.generate(request, model="m", cache=cache)
    bodies = [r.json for r in fake_llm.requests]
    assert bodies[1] == bodies[0] and bodies[3] == bodies[2] == bodies[0]
    assert ("systemInstruction" in bodies[0]) is (cache is None)


def test_openai_body_matches_the_sdk_own_conversion_of_every_message(fake_llm):
    from llm.providers.openai_compat import OpenAICompatibleProvider, build_messages

    provider = OpenAICompatibleProvider(
        name="openai", key_variable="OPENAI_API_KEY", api_key="test", base_url=fake_llm.url + "/v1"
    )
    request = _mixed_request()
    provider._client.chat.completions.create(model="m", messages=build_messages(request))
    provider.generate(request, model="m")

    sdk_body, sent_body = (r.json for r in fake_llm.requests)
    assert sent_body == sdk_body
    assert len(sent_body["messages"]) == 5
