"""Structured output on OpenAI-compatible endpoints: the reply schema goes as `response_format`
(json_schema) where the server takes it, and the prompt's format with the legacy parser where it does
not. The real openai SDK against the stand-in server."""

from __future__ import annotations

import json
import logging
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured

from cindy_site.llm_endpoints import endpoints_structured_setting
from cindy_site.testing.fake_llm import FakeLLMServer
from conversations.models import ActivityEvent, TaskGraph
from llm.endpoint_store import endpoints_refresh
from llm.errors import LLMError
from llm.models import LLMCall, LLMEndpoint, ModelPrice
from llm.planning import plan_turn
from llm.providers import provider_for
from llm.providers.openai_compat import structured_forget, structured_given_up
from llm.request import LLMRequest, Part, Turn
from llm.task_schema import task_list_schema
from llm.tests.conftest import add_message

LEGACY_REPLY = "# «send»\n\nHello from the legacy format"


@pytest.fixture
def ollama(settings, agent):
    structured_forget()
    agent.llm = "ollama:llama3.1"
    agent.save(update_fields=["llm"])
    with FakeLLMServer() as server:
        settings.CINDY_LLM_ENDPOINTS = {"ollama": server.url + "/v1"}
        settings.CINDY_LLM_ENDPOINT_KEYS = {"ollama": ""}
        settings.CINDY_LLM_ENDPOINT_STRUCTURED = {"ollama": "auto"}
        yield server
    structured_forget()


def _turn(conversation, message_id, make_node, text="hi Wendy"):
    TaskGraph.objects.filter(conversation=conversation).update(active_slot=None)  # the last turn is over
    add_message(conversation, message_id, text)
    return plan_turn(node_id=make_node(conversation, target=message_id).pk, sleep=lambda s: None)


def _request() -> LLMRequest:
    return LLMRequest(
        system="Answer with tasks.",
        turns=[Turn(role="user", parts=(Part(text="hi"),))],
        response_schema=task_list_schema(["send"]),
    )


def test_a_server_that_takes_response_format_gets_the_reply_schema_and_its_json_is_read(
    dm, ollama, make_node, clock
):
    ollama.reply_with(json.dumps({"tasks": [{"kind": "send", "text": "Hello in JSON"}]}))

    result = _turn(dm, 1, make_node)

    assert [(t.kind, t.params["text"]) for t in result.tasks] == [("send", "Hello in JSON")]
    (request,) = ollama.requests
    sent = request.json["response_format"]
    assert sent["type"] == "json_schema"
    schema = sent["json_schema"]["schema"]
    assert schema["type"] == "object" and schema["required"] == ["tasks"]
    items = schema["properties"]["tasks"]["items"]
    assert items["type"] == "object" and "send" in items["properties"]["kind"]["enum"]
    call = LLMCall.objects.get()
    assert (call.status, call.error) == ("ok", "")
    assert json.loads(call.reply) == [{"kind": "send", "text": "Hello in JSON"}]  # unwrapped
    assert structured_given_up("ollama", ollama.url + "/v1") is None


def test_a_server_that_refuses_response_format_answers_the_same_turn_in_the_legacy_format(
    dm, ollama, make_node, clock, caplog
):
    ollama.refuse_response_format(400)
    ollama.reply_with(LEGACY_REPLY, input_tokens=1000, output_tokens=100)
    ollama.reply_with("# «send»\n\nAnd again")
    caplog.set_level(logging.INFO, logger="llm.providers.openai_compat")

    first = _turn(dm, 1, make_node)

    assert [t.params["text"] for t in first.tasks] == ["Hello from the legacy format"]
    refused, answered = ollama.requests
    assert refused.json["response_format"]["type"] == "json_schema"
    assert "response_format" not in answered.json
    assert answered.json["messages"] == refused.json["messages"]  # the same request, without the schema
    call = LLMCall.objects.get()
    assert call.status == "ok" and "refused response_format (400" in call.error
    assert (call.input_tokens, call.output_tokens) == (1000, 100)
    event = ActivityEvent.objects.get(kind=ActivityEvent.Kind.LLM_CALL)
    assert "refused response_format" in event.summary and "refused response_format" in event.data["note"]
    assert any("refused response_format" in note for note in first.call_notes)
    assert not first.notes  # no task was adjusted
    said = [r for r in caplog.records if "refused response_format" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO]

    second = _turn(dm, 2, make_node, "still there?")

    assert [t.params["text"] for t in second.tasks] == ["And again"]
    assert len(ollama.requests) == 3 and "response_format" not in ollama.requests[2].json
    assert LLMCall.objects.filter(error="").count() == 1  # the second call has no note
    assert len([r for r in caplog.records if "response_format" in r.getMessage()]) == 1  # said once
    assert not second.notes and not second.call_notes


def test_a_server_that_ignores_response_format_is_read_and_not_sent_it_again(dm, ollama, make_node, clock):
    ollama.reply_with(LEGACY_REPLY)
    ollama.reply_with("# «send»\n\nAnd again")

    first = _turn(dm, 1, make_node)
    second = _turn(dm, 2, make_node, "still there?")

    assert [t.params["text"] for t in first.tasks + second.tasks] == [
        "Hello from the legacy format",
        "And again",
    ]
    sent, after = ollama.requests
    assert "response_format" in sent.json and "response_format" not in after.json
    assert "ignored response_format" in LLMCall.objects.earliest("id").error
    assert "ignored" in structured_given_up("ollama", ollama.url + "/v1")


def test_a_refusal_that_does_not_name_response_format_is_an_error_as_before(dm, ollama, make_node, clock):
    ollama.fail_next(400, message="context length exceeded")

    with pytest.raises(LLMError, match="ollama answered 400: .*context length exceeded"):
        _turn(dm, 1, make_node)

    assert len(ollama.requests) == 1
    assert structured_given_up("ollama", ollama.url + "/v1") is None


def test_mode_on_insists_and_names_the_setting_when_refused(ollama, settings):
    settings.CINDY_LLM_ENDPOINT_STRUCTURED = {"ollama": "on"}
    ollama.refuse_response_format(422, message="Unknown field: response_format.json_schema")

    with pytest.raises(LLMError, match="set CINDY_LLM_ENDPOINT_OLLAMA_STRUCTURED to auto"):
        provider_for("ollama").generate(_request(), model="llama3.1")

    assert len(ollama.requests) == 1
    assert structured_given_up("ollama", ollama.url + "/v1") is None


def test_mode_off_sends_no_response_format(ollama, settings):
    settings.CINDY_LLM_ENDPOINT_STRUCTURED = {"ollama": "off"}
    ollama.reply_with('[{"kind": "send", "text": "hi"}]')

    reply = provider_for("ollama").generate(_request(), model="llama3.1")

    assert json.loads(reply.text) == [{"kind": "send", "text": "hi"}]
    assert "response_format" not in ollama.requests[0].json


def test_a_request_without_a_schema_and_the_built_in_providers_send_none(ollama, fake_llm):
    free = LLMRequest(system="Describe.", turns=[Turn(role="user", parts=(Part(text="a cat"),))])
    provider_for("ollama").generate(free, model="llama3.1")
    provider_for("openai").generate(_request(), model="gpt-5-mini")

    assert "response_format" not in ollama.requests[0].json
    assert "response_format" not in fake_llm.requests[0].json


def test_the_admins_structured_field_reaches_the_provider(db, settings):
    structured_forget()
    settings.CINDY_LLM_ENDPOINTS = {}
    with FakeLLMServer() as server:
        LLMEndpoint.objects.create(name="lan", base_url=server.url + "/v1", structured="off")
        endpoints_refresh()
        provider_for("lan").generate(_request(), model="llama3.1")
        assert "response_format" not in server.requests[0].json
        LLMEndpoint.objects.filter(name="lan").update(structured="auto")
        endpoints_refresh()
        provider_for("lan").generate(_request(), model="llama3.1")
        assert server.requests[1].json["response_format"]["type"] == "json_schema"


def test_an_endpoint_costs_nothing_unless_a_price_is_set(dm, ollama, make_node, clock):
    ollama.reply_with('{"tasks": [{"kind": "send", "text": "one"}]}', input_tokens=1000, output_tokens=100)
    _turn(dm, 1, make_node)
    ModelPrice.objects.create(
        provider="ollama",
        model_prefix="llama3",
        input_per_million=Decimal("1.00"),
        output_per_million=Decimal("2.00"),
    )
    ollama.reply_with('{"tasks": [{"kind": "send", "text": "two"}]}', input_tokens=1000, output_tokens=100)
    _turn(dm, 2, make_node, "again")

    free, priced = LLMCall.objects.order_by("id").values_list("cost", flat=True)
    assert free == Decimal("0")
    assert priced == Decimal("0.001200")  # 1000 in at $1/M + 100 out at $2/M


@pytest.mark.parametrize("value", ["yes", "json", "1"])
def test_a_bad_structured_setting_is_refused_with_the_fix(value):
    with pytest.raises(
        ImproperlyConfigured, match="CINDY_LLM_ENDPOINT_VLLM_GPU_STRUCTURED.*not auto, on or off"
    ):
        endpoints_structured_setting({"vllm-gpu": value})


def test_the_structured_setting_reads_auto_on_and_off():
    assert endpoints_structured_setting({"a": "", "b": " ON ", "c": "off"}) == {
        "a": "auto",
        "b": "on",
        "c": "off",
    }
