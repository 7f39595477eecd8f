"""LLM calls are recorded before their request, closed if their worker dies, and never paid twice for
a planning turn whose first call finished."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from conversations.models import ActivityEvent, TaskNode
from llm.calls import call_llm
from llm.errors import LLMError
from llm.models import LLMCall
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route
from llm.tests.conftest import received_node
from llm.usage import estimate_input_tokens, llm_call_start, llm_calls_mark_interrupted

GEMINI = Route("gemini", "gemini-3-flash-preview")


def _request(final: str = "Consider responding to message 1. The time is 12:00.") -> LLMRequest:
    return LLMRequest(
        system="You are Wendy. " * 200,
        turns=[Turn("user", (Part(text="hi"),)), Turn("user", (Part(text=final),))],
    )


def test_a_call_is_pending_and_costed_at_its_estimated_input_while_its_request_is_out(fake_llm, db):
    fake_llm.fail_next(503)
    fake_llm.reply_with("[]", input_tokens=900, output_tokens=20)
    seen = []

    def sleep(seconds: float) -> None:  # the backoff between attempts: the request is still out
        seen.append(list(LLMCall.objects.values_list("status", "input_tokens", "cost")))

    reply = call_llm(_request(), route=GEMINI, sleep=sleep)
    [[(status, tokens, cost)]] = seen
    assert status == "pending"
    assert tokens == estimate_input_tokens(_request()) > 700
    assert cost > 0
    call = LLMCall.objects.get()
    assert (call.pk, call.status, call.input_tokens, call.output_tokens) == (reply.llm_call_id, "ok", 900, 20)
    assert ActivityEvent.objects.filter(kind="llm_call").count() == 1  # one event, when it finished


def test_a_failed_request_keeps_its_estimated_input_cost(fake_llm, db):
    fake_llm.fail_next(400)
    with pytest.raises(LLMError):
        call_llm(_request(), route=GEMINI, sleep=lambda s: None)
    call = LLMCall.objects.get()
    assert call.status == "error" and call.cost > 0 and call.input_tokens > 0


def test_calls_left_pending_by_a_killed_worker_are_closed_with_their_cost(db, clock):
    call = llm_call_start(
        provider="gemini",
        model="gemini-3-flash-preview",
        purpose="plan",
        agent_id=None,
        conversation_id=None,
        node_id=None,
        estimated_input_tokens=4000,
    )
    assert llm_calls_mark_interrupted(started_before=clock.now()) == 0  # not older than the cut-off
    clock.advance(301)
    assert llm_calls_mark_interrupted(started_before=clock.now() - dt.timedelta(seconds=300)) == 1
    call.refresh_from_db()
    assert call.status == "interrupted" and call.cost > Decimal("0")
    assert "killed" in call.error
    assert ActivityEvent.objects.get(kind="llm_call").data["status"] == "interrupted"


def test_a_planning_task_run_again_reuses_the_reply_its_killed_run_already_had(fake_llm, dm):
    node = received_node(dm)
    fake_llm.reply_with('[{"kind": "send", "text": "hello"}]')
    first = call_llm(_request(), route=GEMINI, purpose="plan", node_id=node.pk, sleep=lambda s: None)
    # The worker died before acting on it; the node runs again a minute later (the time differs).
    again = call_llm(
        _request(final="Consider responding to message 1. The time is 12:01."),
        route=GEMINI,
        purpose="plan",
        node_id=node.pk,
        sleep=lambda s: None,
    )
    assert len(fake_llm.requests) == 1
    assert (again.text, again.llm_call_id) == (first.text, first.llm_call_id)
    assert LLMCall.objects.count() == 1


def test_a_retry_after_a_failure_or_a_changed_history_asks_the_llm_again(fake_llm, dm):
    node = received_node(dm)
    call_llm(_request(), route=GEMINI, purpose="plan", node_id=node.pk, sleep=lambda s: None)
    TaskNode.objects.filter(pk=node.pk).update(attempts=1)  # the turn failed and is retried
    call_llm(_request(), route=GEMINI, purpose="plan", node_id=node.pk, sleep=lambda s: None)
    changed = LLMRequest(
        system=_request().system, turns=[Turn("user", (Part(text="new"),)), *_request().turns]
    )
    call_llm(changed, route=GEMINI, purpose="plan", node_id=node.pk, sleep=lambda s: None)
    assert len(fake_llm.requests) == 3
