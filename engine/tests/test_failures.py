"""Failures: retries with a wait in front, graph deletion, flood waits, permanent and auth errors."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from agents.models import Agent, AgentLease
from conversations.models import ActivityEvent, NodeStatus, TaskGraph, TaskNode
from conversations.transport.base import AuthError, FloodWait, PermanentError, TransportError
from engine.tests.harness import Harness
from sandbox.services.chats import sandbox_person, sandbox_say, sandbox_transcript
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db


class FlakySandbox(SandboxTransport):
    """The sandbox, failing the next sends with the queued errors (only for peers in `only`, if set)."""

    errors: list[Exception] = []
    only: set[int] = set()

    async def send_text(self, peer_id, text, *, random_id, reply_to=None):
        if self.errors and (not self.only or peer_id in self.only):
            raise self.errors.pop(0)
        return await super().send_text(peer_id, text, random_id=random_id, reply_to=reply_to)


@pytest.fixture
def flaky(agent, clock, fake_llm, settings):
    settings.CINDY_MAX_ATTEMPTS = 10
    settings.CINDY_RETRY_SECONDS = 10
    FlakySandbox.errors, FlakySandbox.only = [], set()
    h = Harness(
        clock, transport_factory=lambda agent, gateway_id="": FlakySandbox(agent, gateway_id=gateway_id)
    )
    h.start()
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "hello back"}]))
    return h


def events(kind: str) -> list[ActivityEvent]:
    return list(ActivityEvent.objects.filter(kind=kind).order_by("id"))


def test_a_failing_send_is_retried_after_a_wait_and_then_succeeds(agent, flaky, clock):
    FlakySandbox.errors = [TransportError("network down"), TransportError("network down")]
    sandbox_say(agent=agent, text="hi")
    flaky.settle()
    send = TaskNode.objects.get(kind="send", params__retry_of__isnull=True)
    assert send.status == NodeStatus.DONE and send.attempts == 2
    waits = TaskNode.objects.filter(kind="wait", params__retry_of=send.pk)
    assert waits.count() == 2 and all(w.status == NodeStatus.DONE for w in waits)
    assert len(events("node_retried")) == 2 and len(events("node_failed")) == 2
    assert sandbox_transcript(agent=agent) == ["You: hi", "Wendy: hello back"]


def test_a_send_failing_every_time_is_retried_ten_times_then_the_graph_is_deleted(agent, flaky, clock):
    FlakySandbox.errors = [TransportError("still down")] * 20
    sandbox_say(agent=agent, text="hi")
    start = clock.now()
    flaky.settle()
    send = TaskNode.objects.get(kind="send", params__retry_of__isnull=True)
    assert send.status == NodeStatus.FAILED and send.attempts == 10 and "still down" in send.error
    assert TaskGraph.objects.get().status == TaskGraph.Status.FAILED
    assert len(events("node_retried")) == 9 and len(events("graph_deleted")) == 1
    assert (clock.now() - start).total_seconds() >= 9 * 10
    assert len(FlakySandbox.errors) == 10  # exactly ten attempts were made
    assert sandbox_transcript(agent=agent) == ["You: hi"]


def test_a_flood_wait_reschedules_without_counting_an_attempt(agent, flaky, clock):
    FlakySandbox.errors = [FloodWait(120)]
    sandbox_say(agent=agent, text="hi")
    flaky.settle(until=clock.now() + dt.timedelta(seconds=5))  # past the typing, before the flood ends
    send = TaskNode.objects.get(kind="send")
    assert send.status == NodeStatus.PENDING and send.attempts == 0
    flooded_at = events("node_deferred")[-1].created
    assert (send.not_before - flooded_at).total_seconds() == 120
    assert flaky.gateway.clients[agent.pk].paused_until == send.not_before
    flaky.settle()
    send.refresh_from_db()
    assert send.status == NodeStatus.DONE and send.attempts == 0
    assert send.finished >= send.not_before


def test_a_permanent_error_fails_the_node_at_once_with_the_reason(agent, flaky):
    FlakySandbox.errors = [PermanentError("USER_IS_BLOCKED")]
    sandbox_say(agent=agent, text="hi")
    flaky.settle()
    send = TaskNode.objects.get(kind="send")
    assert send.status == NodeStatus.FAILED and send.attempts == 1 and send.error == "USER_IS_BLOCKED"
    assert TaskGraph.objects.get().status == TaskGraph.Status.FAILED
    assert events("node_retried") == []


def test_an_auth_error_stops_the_agent_and_releases_it(agent, flaky):
    FlakySandbox.errors = [AuthError("AUTH_KEY_UNREGISTERED")]
    sandbox_say(agent=agent, text="hi")
    flaky.settle()
    agent.refresh_from_db()
    assert agent.stopped and "AUTH_KEY_UNREGISTERED" in agent.last_error
    assert agent.pk not in flaky.gateway.clients and not AgentLease.objects.exists()
    assert TaskNode.objects.get(kind="send").status == NodeStatus.PENDING


def test_an_exception_in_one_conversation_does_not_stop_the_others(agent, flaky):
    bad = sandbox_person(name="Mallory")
    FlakySandbox.only = {bad.user_id}
    FlakySandbox.errors = [RuntimeError("boom")] * 20
    sandbox_say(agent=agent, text="hi", as_name="Mallory")
    sandbox_say(agent=agent, text="hi", as_name="Alice")
    flaky.settle()
    assert sandbox_transcript(agent=agent, as_name="Alice") == ["Alice: hi", "Wendy: hello back"]
    assert TaskGraph.objects.filter(status=TaskGraph.Status.FAILED).count() == 1


def test_a_failing_llm_call_waits_for_the_provider_and_then_answers(agent, flaky, fake_llm, settings):
    settings.LLM_MAX_RETRIES = 0
    fake_llm.fail_next(500, times=1)
    sandbox_say(agent=agent, text="hi")
    flaky.settle()
    received = TaskNode.objects.get(kind="received")
    assert received.status == NodeStatus.DONE and received.attempts == 0
    assert received.params["llm_waits"] == 1
    assert sandbox_transcript(agent=agent) == ["You: hi", "Wendy: hello back"]


def test_a_permanent_llm_storm_costs_one_request_per_wait_and_never_drops_the_message(
    agent, flaky, fake_llm, settings, clock
):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.fail_next(429, times=10_000)
    sandbox_say(agent=agent, text="hi")
    start = clock.now()
    flaky.settle(until=start + dt.timedelta(hours=3))
    received = TaskNode.objects.get(kind="received")
    waits = received.params["llm_waits"]
    # Tries after 0, 60, 180, 420 and 900 s, then every 900 s: 15 in three hours, each one failing.
    assert waits == 15 and received.status == NodeStatus.PENDING and received.attempts == 0
    assert len(fake_llm.requests) == 2 + (waits - 1)  # the first turn retries once; later tries probe
    assert TaskGraph.objects.get().status == TaskGraph.Status.ACTIVE
    waiting = [e for e in events("info") if e.data.get("waiting_for_llm")]
    assert len(waiting) == waits and "429" in waiting[-1].summary
    assert len(events("node_deferred")) >= waits
    fake_llm.clear()
    flaky.settle()
    assert sandbox_transcript(agent=agent) == ["You: hi", "Wendy: hello back"]


def test_a_missing_api_key_fails_the_received_node_at_once(agent, flaky, fake_llm, settings):
    settings.GOOGLE_GEMINI_API_KEY = ""
    sandbox_say(agent=agent, text="hi")
    flaky.settle()
    received = TaskNode.objects.get(kind="received")
    assert received.status == NodeStatus.FAILED and "GOOGLE_GEMINI_API_KEY" in received.error
    assert fake_llm.requests == []
    assert TaskGraph.objects.get().status == TaskGraph.Status.FAILED
    assert not Agent.objects.get().stopped
