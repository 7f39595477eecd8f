"""A self-hosted endpoint (CINDY_LLM_ENDPOINTS, as Ollama serves one) and OpenAI side by side in one
real run: one `runagents` with its task workers plans one agent's turns on each, through the real
openai SDK, each against a server of its own."""

from __future__ import annotations

import os
import signal

import pytest

from cindy_site.testing.fake_llm import FakeLLMServer
from engine.tests.processes import manage, plan, start_gateway, wait_for

pytestmark = pytest.mark.slow

_OLGA = (
    "from agents.models import Agent\n"
    "Agent.objects.filter(name='Wendy').update(llm='ollama:llama3.1')\n"
    "Agent.objects.create(name='Olga', phone='+1556', instructions='You are Olga.', transport='sandbox', "
    "llm='gpt-5-mini', start_typing_delay=1, typing_speed=1000)\n"
    # Each person writes first, as `manage.py sandbox say` does (one process start, not three).
    "from django.core.management import call_command\n"
    "call_command('sandbox', 'say', 'Wendy', 'hi Wendy')\n"
    "call_command('sandbox', 'say', 'Olga', 'hi Olga')"
)


def _replies(db) -> dict[str, list[str]]:
    rows = db.query(
        "SELECT a.name, m.text FROM sandbox_sandboxmessage m JOIN sandbox_sandboxuser u ON m.sender_id = u.id "
        "JOIN agents_agent a ON u.agent_id = a.id ORDER BY m.id"
    )
    found: dict[str, list[str]] = {}
    for name, text in rows:
        found.setdefault(name, []).append(text)
    return found


def test_a_self_hosted_endpoint_and_openai_serve_two_agents_in_one_run(child):
    env, db, cloud, tmp = child
    log = tmp / "gateway.log"
    with FakeLLMServer() as ollama:
        env = env | {
            "CINDY_LLM_ENDPOINTS": f"ollama={ollama.url}/v1",
            "OPENAI_BASE_URL": cloud.url + "/v1",
            "OPENAI_API_KEY": "test",
        }
        ollama.set_default_reply(plan("Hello from the oven"))
        cloud.set_default_reply(plan("Hello from the cloud"))
        manage(env, "shell", "-c", _OLGA)
        process = start_gateway(env, log)
        try:
            wait_for(lambda: len(_replies(db)) == 2, "both agents' replies", log)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except Exception:  # noqa: BLE001 - a stuck gateway is killed with its workers
                os.killpg(process.pid, signal.SIGKILL)

        assert _replies(db) == {"Wendy": ["Hello from the oven"], "Olga": ["Hello from the cloud"]}
        (local,) = ollama.requests
        (remote,) = cloud.requests
        assert (local.path, local.model, local.headers["authorization"]) == (
            "/v1/chat/completions",
            "llama3.1",
            "Bearer unused",  # no key configured: a local server needs none
        )
        assert (remote.path, remote.model, remote.headers["authorization"]) == (
            "/v1/chat/completions",
            "gpt-5-mini",
            "Bearer test",
        )
        calls = dict(db.query("SELECT provider, cost FROM llm_llmcall WHERE status = 'ok'"))
        assert float(calls["ollama"]) == 0  # no price row: a self-hosted model costs nothing
        assert float(calls["openai"]) > 0
        summaries = [row[0] for row in db.query("SELECT summary FROM conversations_activityevent")]
        assert any("(answered by ollama/llama3.1)" in s for s in summaries)
        assert any("(answered by openai/gpt-5-mini)" in s for s in summaries)
