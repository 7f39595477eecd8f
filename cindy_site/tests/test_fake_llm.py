"""The fake LLM server answers the real google-genai and openai SDKs in their own wire formats."""

from __future__ import annotations

import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from cindy_site.testing.fake_llm import FakeLLMServer


@pytest.fixture
def server():
    with FakeLLMServer() as running:
        yield running


def _gemini(server: FakeLLMServer) -> genai.Client:
    return genai.Client(
        api_key="test",
        http_options=types.HttpOptions(
            base_url=server.url, api_version="v1beta", retry_options=types.HttpRetryOptions(attempts=1)
        ),
    )


def _openai(server: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)


def test_gemini_sdk_reads_text_and_usage_from_the_fake(server):
    server.reply_with("hello", input_tokens=120, output_tokens=7, cached_tokens=100, thinking_tokens=3)

    client = _gemini(server)  # the client closes its HTTP pool when collected: keep a reference
    response = client.models.generate_content(
        model="gemini-3-flash-preview",
        contents=[types.Content(role="user", parts=[types.Part(text="hi")])],
        config=types.GenerateContentConfig(system_instruction="be brief"),
    )

    assert response.text == "hello"
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    usage = response.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count) == (120, 7)
    assert (usage.cached_content_token_count, usage.thoughts_token_count) == (100, 3)
    recorded = server.requests[0]
    assert recorded.path == "/v1beta/models/gemini-3-flash-preview:generateContent"
    assert recorded.json["systemInstruction"]["parts"][0]["text"] == "be brief"
    assert recorded.json["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert recorded.headers["x-goog-api-key"] == "test"


def test_openai_sdk_reads_text_and_usage_from_the_fake(server):
    server.reply_with("hey", input_tokens=50, output_tokens=4, cached_tokens=32, thinking_tokens=2)

    response = _openai(server).chat.completions.create(
        model="grok-4-fast-non-reasoning", messages=[{"role": "user", "content": "hi"}]
    )

    assert response.choices[0].message.content == "hey"
    assert response.usage.prompt_tokens == 50
    assert response.usage.completion_tokens == 6
    assert response.usage.prompt_tokens_details.cached_tokens == 32
    assert response.usage.completion_tokens_details.reasoning_tokens == 2
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].json["messages"] == [{"role": "user", "content": "hi"}]


def test_queued_replies_come_out_in_order_then_the_default(server):
    server.set_default_reply("default")
    server.reply_with("first")
    server.reply_with("second")
    client = _openai(server)

    texts = [
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        .choices[0]
        .message.content
        for _ in range(3)
    ]

    assert texts == ["first", "second", "default"]


def test_fail_next_answers_with_the_status_for_each_sdk(server):
    server.fail_next(429)
    server.fail_next(500)

    gemini = _gemini(server)
    with pytest.raises(genai_errors.ClientError) as gemini_error:
        gemini.models.generate_content(model="gemini-x", contents="hi")
    with pytest.raises(openai.InternalServerError):
        _openai(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    assert gemini_error.value.code == 429
    assert len(server.requests) == 2


def test_blocked_reply_has_no_candidates_for_gemini(server):
    server.reply_with("unused", blocked=True)

    client = _gemini(server)
    response = client.models.generate_content(model="gemini-x", contents="hi")

    assert not response.candidates
    assert response.prompt_feedback.block_reason == types.BlockedReason.SAFETY


def test_fixture_points_settings_at_the_server(fake_llm, settings):
    assert settings.GEMINI_BASE_URL == fake_llm.url
    assert settings.OPENAI_BASE_URL == fake_llm.url + "/v1"
    assert settings.GOOGLE_GEMINI_API_KEY == "test"
    assert settings.DEFAULT_AGENT_LLM == "gemini"


def test_fail_model_fails_only_that_models_requests_for_the_count_given(server):
    server.reply_with("from the fallback")
    server.set_default_reply("again")
    gemini, cloud = _gemini(server), _openai(server)
    server.fail_model("gemini-2.5-flash", 503, times=2)

    with pytest.raises(genai_errors.ServerError) as first:
        gemini.models.generate_content(model="gemini-2.5-flash", contents="hi")
    other = cloud.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(genai_errors.ServerError):
        gemini.models.generate_content(model="gemini-2.5-flash", contents="hi")
    recovered = gemini.models.generate_content(model="gemini-2.5-flash", contents="hi")

    assert first.value.code == 503
    assert other.choices[0].message.content == "from the fallback"  # the queued reply is left for it
    assert recovered.text == "again"
    assert server.model_failures_left("gemini-2.5-flash") == 0


def test_an_open_ended_outage_lasts_until_the_model_recovers(server):
    server.fail_model("gpt-5-mini", 503, times=None)
    client = _openai(server)
    for _ in range(3):
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "x"}])

    assert server.model_failures_left("gpt-5-mini") is None
    assert server.recover_model("gpt-5-mini") is None
    server.reply_with("back")
    reply = client.chat.completions.create(model="gpt-5-mini", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content == "back"


def test_fail_model_refuses_a_count_below_one(server):
    with pytest.raises(ValueError, match="fail_model times is 0: give 1 or more"):
        server.fail_model("gpt-5-mini", 503, times=0)
