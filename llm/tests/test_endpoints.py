"""Self-hosted OpenAI-compatible endpoints by name (CINDY_LLM_ENDPOINTS): `ollama:llama3.1` goes to
that endpoint's chat-completions API, beside OpenAI, through the real openai SDK."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from agents.models import Agent
from cindy_site.llm_endpoints import endpoints_setting
from cindy_site.testing.fake_llm import FakeLLMServer
from conversations.models import Conversation
from llm.models import LLMCall
from llm.planning import plan_turn
from llm.routing import Route, UnknownModelError, resolve
from llm.tests.conftest import add_message


@pytest.fixture
def ollama(settings):
    with FakeLLMServer() as server:
        settings.CINDY_LLM_ENDPOINTS = {"ollama": server.url + "/v1"}
        settings.CINDY_LLM_ENDPOINT_KEYS = {"ollama": ""}
        yield server


def _send(text: str) -> str:
    return json.dumps([{"kind": "send", "text": text}])


def test_a_local_endpoint_and_openai_serve_two_agents_in_one_run(
    agent, dm, fake_llm, ollama, make_node, clock
):
    agent.llm = "ollama:llama3.1"
    agent.save(update_fields=["llm"])
    other = Agent.objects.create(
        name="Olga", phone="+15550000002", instructions="Be brief.", llm="gpt-5-mini"
    )
    olga_dm = Conversation.objects.create(agent=other, peer_id=1001, kind=Conversation.Kind.DM, title="Alice")
    add_message(dm, 1, "hi Wendy")
    add_message(olga_dm, 1, "hi Olga")
    ollama.reply_with(_send("Hello from the oven"), input_tokens=1000, output_tokens=100)
    fake_llm.reply_with(_send("Hello from the cloud"), input_tokens=1000, output_tokens=100)

    wendy = plan_turn(node_id=make_node(dm, target=1).pk, sleep=lambda s: None)
    olga = plan_turn(node_id=make_node(olga_dm, target=1).pk, sleep=lambda s: None)

    assert [t.params["text"] for t in wendy.tasks] == ["Hello from the oven"]
    assert [t.params["text"] for t in olga.tasks] == ["Hello from the cloud"]
    (local,) = ollama.requests
    (cloud,) = fake_llm.requests
    assert (local.path, local.model) == ("/v1/chat/completions", "llama3.1")
    assert local.headers["authorization"] == "Bearer unused"  # no key configured: none is needed
    assert (cloud.model, cloud.headers["authorization"]) == ("gpt-5-mini", "Bearer test")
    costs = dict(LLMCall.objects.values_list("provider", "cost"))
    assert costs["ollama"] == Decimal("0")  # no price row: a self-hosted model costs nothing
    assert costs["openai"] > 0
    assert wendy.answered_by == "ollama/llama3.1"


def test_an_endpoints_key_is_sent_when_set(agent, dm, ollama, make_node, settings, clock):
    settings.CINDY_LLM_ENDPOINT_KEYS = {"ollama": "s3cret"}
    agent.llm = "ollama:qwen3"
    agent.save(update_fields=["llm"])
    add_message(dm, 1, "hi")
    ollama.reply_with(_send("hi"))

    plan_turn(node_id=make_node(dm, target=1).pk, sleep=lambda s: None)

    assert ollama.requests[0].headers["authorization"] == "Bearer s3cret"


def test_endpoint_names_route_by_their_prefix(settings):
    settings.CINDY_LLM_ENDPOINTS = {"ollama": "http://127.0.0.1:11434/v1", "vllm": "http://gpu:8000/v1"}
    assert resolve("ollama:llama3.1") == Route("ollama", "llama3.1")
    assert resolve("VLLM:Qwen/Qwen3-8B") == Route("vllm", "Qwen/Qwen3-8B")
    with pytest.raises(UnknownModelError, match='no model after "ollama:"'):
        resolve("ollama:")
    settings.CINDY_LLM_ENDPOINTS = {}
    with pytest.raises(UnknownModelError, match="CINDY_LLM_ENDPOINTS"):
        resolve("ollama:llama3.1")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ollama", "is not name=url"),
        ("ollama=localhost:11434", "is not name=url"),
        ("openai=http://127.0.0.1:8000/v1", "is a built-in provider"),
        ("Local GPU=http://127.0.0.1:8000/v1", "is not an endpoint name"),
    ],
)
def test_a_malformed_endpoint_list_is_refused_with_the_fix(value, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        endpoints_setting("CINDY_LLM_ENDPOINTS", [value])


def test_endpoint_pairs_are_read_in_order():
    pairs = ["Ollama=http://127.0.0.1:11434/v1", " vllm = https://gpu/v1"]
    assert endpoints_setting("CINDY_LLM_ENDPOINTS", pairs) == {
        "ollama": "http://127.0.0.1:11434/v1",
        "vllm": "https://gpu/v1",
    }
