"""`/metrics` after a scripted conversation: each family with its values, and who may read it."""

from __future__ import annotations

import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice
from prometheus_client.parser import text_string_to_metric_families

from conversations.transport.base import FloodWait, TransportError
from dashboard.tests.conftest import _visitor, make_user
from engine.health import process_beat
from engine.models import ProcessHeartbeat
from engine.tests.harness import Harness, tasks
from engine.tests.test_failures import FlakySandbox
from llm.models import LLMCall
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db
TOKEN = "scrape-me-0123456789"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.CINDY_METRICS_TOKEN = TOKEN
    settings.CINDY_READ_DELAY_SECONDS = 3


def scrape(client: Client, **headers) -> dict[tuple[str, frozenset], float]:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples, name: str, /, **labels) -> float:
    return samples[(name, frozenset(labels.items()))]


def families(samples) -> set[str]:
    return {name for name, _ in samples}


def test_metrics_after_a_scripted_conversation(agent, clock, fake_llm, client):
    FlakySandbox.errors, FlakySandbox.only = [FloodWait(30), TransportError("network down")], set()
    harness = Harness(
        clock, transport_factory=lambda agent, gateway_id="": FlakySandbox(agent, gateway_id=gateway_id)
    )
    harness.start()
    fake_llm.reply_with(
        tasks({"kind": "send", "text": "Hi!"}), input_tokens=100, cached_tokens=40, output_tokens=20
    )
    fake_llm.reply_with(tasks({"kind": "send", "text": "Sure."}), input_tokens=200, output_tokens=30)
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    sandbox_say(agent=agent, text="can you help?")
    harness.settle()
    sandbox_say(agent=agent, text="what a day", as_name="Alice", group="Club")  # recorded, not answered
    harness.settle()
    sandbox_say(agent=agent, text="still there?")  # read in 3 s: left waiting 10 s past that
    harness.ingest()
    clock.advance(13)
    async_to_sync(harness.gateway.heartbeat.run)(force=True)  # the lease, renewed as the gateway does
    process_beat(
        name="gw-test",
        kind=ProcessHeartbeat.Kind.GATEWAY,
        pass_at=clock.now(),
        renewed_at=clock.now(),
        held=1,
    )

    samples = scrape(client, Authorization=f"Bearer {TOKEN}")

    assert {
        "cindy_messages_total",
        "cindy_turns_total",
        "cindy_llm_calls_total",
        "cindy_llm_tokens_total",
        "cindy_llm_cost_usd_total",
        "cindy_llm_latency_seconds_count",
        "cindy_reply_latency_seconds",
        "cindy_queue_depth",
        "cindy_oldest_pending_node_age_seconds",
        "cindy_agent_driven",
        "cindy_flood_waits_total",
        "cindy_errors_total",
        "cindy_process_up",
    } <= families(samples)
    assert value(samples, "cindy_messages_total", agent="Wendy", direction="in") == 4
    assert value(samples, "cindy_messages_total", agent="Wendy", direction="out") == 2
    assert value(samples, "cindy_turns_total", agent="Wendy", outcome="done") == 2
    (model,) = set(LLMCall.objects.values_list("model", flat=True))
    key = {"agent": "Wendy", "provider": "gemini", "model": model}
    assert value(samples, "cindy_llm_calls_total", **key, purpose="plan", status="ok") == 2
    assert value(samples, "cindy_llm_tokens_total", **key, type="input") == 300
    assert value(samples, "cindy_llm_tokens_total", **key, type="cached") == 40
    assert value(samples, "cindy_llm_tokens_total", **key, type="output") == 50
    assert value(samples, "cindy_llm_tokens_total", **key, type="cache_write") == 0  # Anthropic's only
    cost = sum(LLMCall.objects.values_list("cost", flat=True), Decimal("0"))
    assert cost > 0 and value(samples, "cindy_llm_cost_usd_total", **key) == pytest.approx(float(cost))
    latency = {"provider": "gemini", "model": model}
    assert value(samples, "cindy_llm_latency_seconds_count", **latency) == 2
    assert value(samples, "cindy_llm_latency_seconds_bucket", **latency, le="+Inf") == 2
    assert value(samples, "cindy_replies_recent", agent="Wendy") == 2
    # The first reply waited out the 30 s flood wait: the slowest reply took longer than that.
    assert value(samples, "cindy_reply_latency_seconds", agent="Wendy", quantile="1.0") > 30
    assert value(samples, "cindy_reply_latency_seconds", agent="Wendy", quantile="0.5") < 30
    # A summary: the count and sum cover every stored reply, so their rates give the mean latency.
    assert value(samples, "cindy_reply_latency_seconds_count", agent="Wendy") == 2
    assert value(samples, "cindy_reply_latency_seconds_sum", agent="Wendy") == pytest.approx(
        value(samples, "cindy_reply_latency_seconds", agent="Wendy", quantile="1.0")
        + value(samples, "cindy_reply_latency_seconds", agent="Wendy", quantile="0.5")
    )
    assert value(samples, "cindy_queue_depth", kind="received", status="pending") == 1
    assert value(samples, "cindy_oldest_pending_node_age_seconds", kind="received") == 10
    assert value(samples, "cindy_agent_driven", agent="Wendy", holder="gw-test") == 1
    assert value(samples, "cindy_flood_waits_total", agent="Wendy") == 1
    assert value(samples, "cindy_errors_total", agent="Wendy", kind="node_failed") == 1
    assert value(samples, "cindy_errors_total", agent="Wendy", kind="node_retried") == 1
    assert value(samples, "cindy_process_up", kind="gateway", name="gw-test") == 1

    # Retention turns the calls into daily totals: the LLM counters read the same, the calls as pruned.
    clock.advance(400 * 86400)
    from engine.retention import retention_run

    retention_run()
    after = scrape(client, Authorization=f"Bearer {TOKEN}")
    assert LLMCall.objects.count() == 0
    assert value(after, "cindy_llm_calls_total", **key, purpose="", status="pruned") == 2
    assert value(after, "cindy_llm_tokens_total", **key, type="input") == 300
    assert value(after, "cindy_llm_cost_usd_total", **key) == pytest.approx(float(cost))


def test_an_agent_no_gateway_drives_reads_zero(agent, client):
    samples = scrape(client, Authorization=f"Bearer {TOKEN}")
    assert value(samples, "cindy_agent_driven", agent="Wendy", holder="") == 0


def test_metrics_are_refused_without_the_token_or_a_verified_staff_login(db, client):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": TOKEN}).status_code == 401
    staff = make_user("operator")
    device = TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)
    unverified = _visitor(staff, None)
    response = unverified.client.get("/metrics")
    assert response.status_code == 401 and b"cindy_" not in response.content
    assert _visitor(make_user("visitor", staff=False), None).client.get("/metrics").status_code == 401
    response = _visitor(staff, device).client.get("/metrics")
    assert response.status_code == 200 and b"# TYPE cindy_messages_total counter" in response.content


def test_without_a_token_setting_only_verified_staff_read_the_metrics(db, client, settings):
    settings.CINDY_METRICS_TOKEN = ""
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 401
    staff = make_user("operator")
    device = TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)
    response = _visitor(staff, device).client.get("/metrics")
    assert response.status_code == 200 and b"# TYPE cindy_turns_total counter" in response.content


def test_a_scrape_costs_a_fixed_number_of_queries(agent, clock, django_assert_num_queries):
    from engine.metrics import DatabaseCollector

    process_beat(name="gw-test", kind=ProcessHeartbeat.Kind.GATEWAY, pass_at=clock.now())
    with django_assert_num_queries(14):
        names = [family.name for family in DatabaseCollector().collect()]
    assert all(name.startswith("cindy_") for name in names) and len(names) == 17


PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


@pytest.mark.skipif(
    not Path(PROMTOOL).exists(),
    reason="promtool is missing: install Debian's prometheus package (./test.sh does so as root)",
)
def test_a_scrape_passes_promtool_check_metrics(agent, clock, fake_llm, client):
    harness = Harness(clock)
    harness.start()
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    process_beat(name="gw-test", kind=ProcessHeartbeat.Kind.GATEWAY, pass_at=clock.now())
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert b"cindy_reply_latency_seconds" in response.content

    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=response.content, capture_output=True, timeout=60
    )

    assert checked.returncode == 0, (checked.stdout + checked.stderr).decode()


def test_each_llm_routes_breaker_state_is_scraped(db, client, clock, settings):
    from llm.breakers import breaker_failure
    from llm.routing import Route

    settings.CINDY_LLM_BREAKER_FAILURES = 2
    for _ in range(2):
        breaker_failure(Route("gemini", "gemini-3-flash-preview"), error="Gemini answered 503")
    breaker_failure(Route("openai", "gpt-5-mini"), error="openai answered 500")

    metrics = scrape(client, Authorization=f"Bearer {TOKEN}")

    def value(name, **labels):
        return metrics[(name, frozenset(labels.items()))]

    gemini = {"provider": "gemini", "model": "gemini-3-flash-preview"}
    gpt = {"provider": "openai", "model": "gpt-5-mini"}
    assert [value("cindy_llm_breaker_state", **gemini, state=s) for s in ("closed", "open", "probing")] == [
        0,
        1,
        0,
    ]
    assert [value("cindy_llm_breaker_state", **gpt, state=s) for s in ("closed", "open", "probing")] == [
        1,
        0,
        0,
    ]
    assert (value("cindy_llm_breaker_failures", **gemini), value("cindy_llm_breaker_failures", **gpt)) == (
        2,
        1,
    )
