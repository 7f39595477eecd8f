"""OpenAI-compatible endpoints added in the admin (`LLMEndpoint`): `NAME:MODEL` routes to them through
the real openai SDK, bad values are refused on the form, the key stays hidden, and a name that
CINDY_LLM_ENDPOINTS uses too is served by the setting."""

from __future__ import annotations

import json
import logging

import pytest

from cindy_site.llm_endpoints import endpoints
from cindy_site.testing.fake_llm import FakeLLMServer
from llm.endpoint_store import endpoints_refresh
from llm.models import LLMEndpoint
from llm.planning import plan_turn
from llm.routing import Route, UnknownModelError, resolve
from llm.tests.conftest import add_message

pytestmark = pytest.mark.django_db

ADD = "/admin/llm/llmendpoint/add/"


def _form(**values: str) -> dict[str, str]:
    return {
        "name": "lan",
        "base_url": "http://127.0.0.1:1/v1",
        "api_key": "",
        "enabled": "on",
        "structured": "auto",
        **values,
    }


@pytest.fixture
def lan():
    with FakeLLMServer() as server:
        yield server


def _send(text: str) -> str:
    return json.dumps([{"kind": "send", "text": text}])


def test_an_endpoint_added_in_the_admin_serves_its_name(
    verified_client, lan, agent, dm, make_node, settings, clock, caplog, django_capture_on_commit_callbacks
):
    settings.CINDY_LLM_ENDPOINTS = {}
    with pytest.raises(UnknownModelError):
        resolve("lan:llama3.1")

    with caplog.at_level(logging.DEBUG), django_capture_on_commit_callbacks(execute=True):
        response = verified_client.post(ADD, _form(base_url=lan.url + "/v1", api_key="s3cret-key"))
    assert response.status_code == 302, response.content.decode()[:2000]

    assert resolve("lan:llama3.1") == Route("lan", "llama3.1")  # this process installed the new row
    agent.llm = "lan:llama3.1"
    agent.save(update_fields=["llm"])
    add_message(dm, 1, "hi")
    lan.reply_with(_send("Hello from the LAN"))
    result = plan_turn(node_id=make_node(dm, target=1).pk, sleep=lambda s: None)

    assert [t.params["text"] for t in result.tasks] == ["Hello from the LAN"]
    (request,) = lan.requests
    assert (request.path, request.model) == ("/v1/chat/completions", "llama3.1")
    assert request.headers["authorization"] == "Bearer s3cret-key"
    assert request.json["response_format"]["type"] == "json_schema"  # structured output: auto
    assert result.answered_by == "lan/llama3.1"
    assert "s3cret-key" not in caplog.text


def test_a_worker_sees_a_row_another_process_stored_after_its_refresh(settings):
    settings.CINDY_LLM_ENDPOINTS = {}
    LLMEndpoint.objects.create(name="vllm", base_url="https://gpu.example/v1")
    LLMEndpoint.objects.create(name="off", base_url="https://off.example/v1", enabled=False)
    assert "vllm" not in endpoints()

    endpoints_refresh()

    assert endpoints()["vllm"].base_url == "https://gpu.example/v1"
    assert endpoints()["vllm"].source == "admin"
    assert "off" not in endpoints()  # a disabled row routes nothing


def test_a_process_that_never_reloaded_looks_a_stored_name_up_once(settings, django_assert_num_queries):
    settings.CINDY_LLM_ENDPOINTS = {}
    LLMEndpoint.objects.create(name="vllm", base_url="https://gpu.example/v1")

    with django_assert_num_queries(1):
        assert resolve("vllm:qwen3") == Route("vllm", "qwen3")
    with django_assert_num_queries(0):
        assert resolve("vllm:qwen3") == Route("vllm", "qwen3")
        with pytest.raises(UnknownModelError):
            resolve("nothere:qwen3")  # a miss right after a read does not read again
        assert resolve("meta-llama/llama-3:free") == Route("openrouter", "meta-llama/llama-3:free")


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"name": "Ollama"}, "name", "use lowercase letters, digits, - or _"),
        ({"name": "my lan"}, "name", "is not an endpoint name"),
        ({"name": "openai"}, "name", "is a built-in provider: give the endpoint another name"),
        ({"base_url": "ftp://files.example/v1"}, "base_url", "is not an http or https URL"),
        ({"base_url": "localhost:11434"}, "base_url", "e.g. http://localhost:11434/v1"),
        ({"base_url": "http://gpu:80a/v1"}, "base_url", "is not an http or https URL"),
    ],
)
def test_a_bad_value_is_refused_on_the_form_with_the_fix(verified_client, values, field, message):
    response = verified_client.post(ADD, _form(**values))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors[field])
    assert not LLMEndpoint.objects.exists()


def test_the_key_is_never_shown_and_kept_when_the_field_is_left_empty(verified_client):
    endpoint = LLMEndpoint.objects.create(name="lan", base_url="http://127.0.0.1:1/v1", api_key="s3cret-key")
    change = f"/admin/llm/llmendpoint/{endpoint.pk}/change/"

    assert "s3cret-key" not in verified_client.get(change).content.decode()
    listing = verified_client.get("/admin/llm/llmendpoint/").content.decode()
    assert "s3cret-key" not in listing and "set (hidden)" in listing

    assert verified_client.post(change, _form(base_url="http://10.0.0.2:8000/v1")).status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.base_url, endpoint.api_key) == ("http://10.0.0.2:8000/v1", "s3cret-key")

    assert verified_client.post(change, _form(clear_api_key="on")).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.api_key == ""


def test_the_setting_wins_on_a_name_clash_and_the_admin_says_so(
    verified_client, settings, django_capture_on_commit_callbacks
):
    settings.CINDY_LLM_ENDPOINTS = {"lan": "http://from-the-setting:11434/v1"}
    settings.CINDY_LLM_ENDPOINT_KEYS = {"lan": ""}

    with django_capture_on_commit_callbacks(execute=True):
        response = verified_client.post(ADD, _form(base_url="http://from-the-admin:8000/v1"), follow=True)

    html = response.content.decode()
    assert "CINDY_LLM_ENDPOINTS also names lan (http://from-the-setting:11434/v1)" in html
    assert "the setting is used, not this row" in html
    endpoint = endpoints()["lan"]
    assert (endpoint.base_url, endpoint.source) == ("http://from-the-setting:11434/v1", "setting")
    listing = verified_client.get("/admin/llm/llmendpoint/").content.decode()
    assert "No: CINDY_LLM_ENDPOINTS also names lan" in listing
