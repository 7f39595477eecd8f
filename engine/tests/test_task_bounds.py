"""Task values that used to pass validation and then fail the turn ten times, now bounded or refused."""

from __future__ import annotations

import pytest

from conversations.models import NodeStatus, TaskGraph, TaskNode
from engine.tests.harness import tasks
from llm.tasks import MAX_WAIT_SECONDS, TELEGRAM_MESSAGE_LIMIT
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


def _turn(agent, harness, fake_llm, reply: str) -> TaskNode:
    fake_llm.reply_with(reply)
    sandbox_say(agent=agent, text="hello")
    harness.settle(max_rounds=400)
    return TaskNode.objects.get(kind="received")


@pytest.mark.parametrize("delay", ["1e308", "1e12"])
def test_an_endless_wait_is_bounded_and_the_graph_carries_on(agent, harness, fake_llm, clock, delay):
    start = clock.now()
    received = _turn(
        agent,
        harness,
        fake_llm,
        f'[{{"kind": "wait", "delay": {delay}}}, {{"kind": "send", "text": "later"}}]',
    )
    wait = TaskNode.objects.get(kind="wait")
    assert wait.params["delay"] == MAX_WAIT_SECONDS and wait.status == NodeStatus.DONE
    assert received.result["errors"] == [] and "longer than a week" in received.result["notes"][0]
    assert (clock.now() - start).total_seconds() >= MAX_WAIT_SECONDS
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: later"


def test_a_reply_to_beyond_telegrams_ids_is_refused_before_anything_is_sent(agent, harness, fake_llm):
    received = _turn(
        agent,
        harness,
        fake_llm,
        '[{"kind": "send", "text": "hi", "reply_to": 1000000000000000000000000000000}]',
    )
    assert "not a Telegram message id" in received.result["errors"][0]
    assert not TaskNode.objects.filter(kind="send").exists()
    assert TaskGraph.objects.get().status == TaskGraph.Status.DONE


def test_a_lone_surrogate_is_replaced_and_the_message_delivered(agent, harness, fake_llm):
    received = _turn(agent, harness, fake_llm, '[{"kind": "send", "text": "caf\\ud800e"}]')
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: caf\ufffde"
    assert "lone surrogates" in received.result["notes"][0]


def test_an_overlong_send_goes_out_as_several_messages_in_order(agent, harness, fake_llm):
    paragraphs = [f"Paragraph {i}. " + "word " * 600 for i in range(3)]  # 3 x ~3,000 characters
    received = _turn(agent, harness, fake_llm, tasks({"kind": "send", "text": "\n\n".join(paragraphs)}))
    sent = sandbox_transcript(agent=agent)[1:]
    assert len(sent) == 3 and all(len(line) - len("Wendy: ") <= TELEGRAM_MESSAGE_LIMIT for line in sent)
    assert [line.split()[1:3] for line in sent] == [
        ["Paragraph", "0."],
        ["Paragraph", "1."],
        ["Paragraph", "2."],
    ]
    sends = list(TaskNode.objects.filter(kind="send").order_by("sequence"))
    assert list(sends[1].depends_on.all()) == [sends[0]] and list(sends[2].depends_on.all()) == [sends[1]]
    assert "split into 3 messages" in received.result["notes"][0]
