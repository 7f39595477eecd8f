"""A reply the provider's SDK cannot read (a 200 that is not JSON, JSON nested too deeply) costs one
call: the LLMCall row ends as an error naming why, the turn fails once, and the message stays
answerable by the next turn. Through the real google-genai and openai SDKs."""

from __future__ import annotations

import json

import pytest

from conversations.models import NodeKind, NodeStatus, TaskGraph, TaskNode
from engine.tests.harness import tasks
from llm.calls import call_llm
from llm.errors import LLMPermanentError, LLMTransientError
from llm.models import LLMCall
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db

NOT_JSON = "<html><body>Service temporarily rewritten by a proxy</body></html>"
NESTED = "[" * 100_000 + "]" * 100_000

ROUTES = {"gemini": Route("gemini", "gemini-3-flash-preview"), "grok": Route("grok", "grok-4-fast")}


def _request() -> LLMRequest:
    return LLMRequest(system="You are Wendy.", turns=[Turn("user", (Part(text="hi"),))])


@pytest.mark.parametrize("provider", sorted(ROUTES))
@pytest.mark.parametrize(
    ("body", "why"),
    [(NOT_JSON, "not the JSON the SDK expects"), (NESTED, "nested too deeply")],
    ids=["not-json", "nested"],
)
def test_an_unreadable_reply_is_one_call_ending_in_an_error(fake_llm, provider, body, why):
    fake_llm.raw_next(body)
    slept: list[float] = []
    with pytest.raises(LLMPermanentError) as raised:
        call_llm(_request(), route=ROUTES[provider], sleep=slept.append)

    assert len(fake_llm.requests) == 1 and not slept
    call = LLMCall.objects.get()
    assert call.status == "error"
    if provider == "gemini" or body == NOT_JSON:
        assert why in call.error and "not asked again" in call.error
    assert str(raised.value) == call.error


def test_retries_that_run_out_leave_no_call_pending(fake_llm, settings):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.fail_next(503, times=2)
    with pytest.raises(LLMTransientError):
        call_llm(_request(), route=ROUTES["gemini"], sleep=lambda s: None)
    assert list(LLMCall.objects.values_list("status", flat=True)) == ["error"]


@pytest.mark.parametrize("body", [NOT_JSON, NESTED], ids=["not-json", "nested"])
def test_a_malformed_reply_fails_the_turn_once_and_the_next_turn_answers_the_message(
    agent, harness, fake_llm, body
):
    fake_llm.raw_next(body)
    sandbox_say(agent=agent, text="what time is the concert?")
    harness.settle()

    assert len(fake_llm.requests) == 1  # one paid call, no retries of the same unreadable reply
    call = LLMCall.objects.get()
    assert call.status == "error" and "not asked again" in call.error
    received = TaskNode.objects.get(kind=NodeKind.RECEIVED)
    assert received.status == NodeStatus.FAILED and received.attempts == 1
    assert TaskGraph.objects.get().status == TaskGraph.Status.FAILED

    fake_llm.reply_with(tasks({"kind": "send", "text": "At eight!"}))
    sandbox_say(agent=agent, text="hello?")
    harness.settle()

    assert sandbox_transcript(agent=agent)[-1] == "Wendy: At eight!"
    assert "what time is the concert?" in json.dumps(fake_llm.requests[-1].json, ensure_ascii=False)
    assert not LLMCall.objects.filter(status="pending").exists()
