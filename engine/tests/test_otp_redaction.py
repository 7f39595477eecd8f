"""One-time sign-in codes sent through a gateway request never reach the mirror, the activity stream
or a prompt in clear."""

from __future__ import annotations

import json

import pytest

from agents.models import GatewayRequest
from conversations.models import ActivityEvent, Message
from conversations.services.ingest import OTP_RANDOM_ID_BASE, REDACTED_TEXT, message_upsert
from conversations.transport.base import InboundMessage
from engine.tests.harness import Harness
from sandbox.services.chats import sandbox_person, sandbox_say

pytestmark = pytest.mark.django_db

CODE = "482913"


def _everything_recorded() -> str:
    messages = list(Message.objects.values_list("text", flat=True))
    events = [(e.summary, e.data) for e in ActivityEvent.objects.all()]
    return json.dumps([messages, events], ensure_ascii=False)


def test_a_sent_code_is_redacted_in_the_mirror_events_and_prompt(agent, clock, fake_llm):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "hello"}]))
    harness = Harness(clock)
    harness.start()
    operator = sandbox_person(name="Operator")
    request = GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.SEND_OTP,
        params={"user_id": operator.user_id, "text": f"Your code is {CODE}"},
        created=clock.now(),
    )
    harness.step("requests")
    request.refresh_from_db()
    assert request.status == GatewayRequest.Status.DONE

    harness.settle()  # the sandbox delivers the sent message as an update
    client = harness.gateway.clients[agent.pk]
    client.connected = False  # a reconnect: the reconciler reads history again
    harness.step("connect")
    sandbox_say(agent=agent, text="thanks, logged in", as_name="Operator")
    harness.settle()

    mirrored = Message.objects.get(
        conversation__peer_id=operator.user_id, message_id=request.result["message_id"]
    )
    assert (mirrored.text, mirrored.redacted, mirrored.is_agent) == (REDACTED_TEXT, True, True)
    assert CODE not in _everything_recorded()
    out = ActivityEvent.objects.get(kind="message_out", data__message_id=mirrored.message_id)
    assert REDACTED_TEXT in out.summary
    prompts = json.dumps([r.json for r in fake_llm.requests], ensure_ascii=False)
    assert fake_llm.requests and CODE not in prompts and REDACTED_TEXT in prompts


def test_a_code_found_in_history_before_its_send_was_recorded_is_stored_redacted(agent, clock):
    record = InboundMessage(
        peer_id=1234,
        chat_kind="dm",
        message_id=7,
        date=clock.now(),
        sender_id=99,
        is_outgoing=True,
        text=f"Your code is {CODE}",
        random_id=OTP_RANDOM_ID_BASE + 5,
    )
    _, message, _ = message_upsert(agent=agent, record=record)
    assert (message.text, message.redacted) == (REDACTED_TEXT, True)
    assert CODE not in _everything_recorded()


def test_a_redacted_message_stays_redacted_when_delivered_or_edited_again(agent, clock):
    record = InboundMessage(
        peer_id=1234,
        chat_kind="dm",
        message_id=7,
        date=clock.now(),
        sender_id=99,
        is_outgoing=True,
        text=CODE,
    )
    message_upsert(agent=agent, record=record, redacted=True)
    message_upsert(agent=agent, record=record)
    message_upsert(agent=agent, record=record, edited=True)
    message = Message.objects.get(message_id=7)
    assert (message.text, message.redacted) == (REDACTED_TEXT, True)
    assert CODE not in _everything_recorded()


def test_ordinary_sends_are_not_redacted(agent, clock):
    record = InboundMessage(
        peer_id=1234,
        chat_kind="dm",
        message_id=8,
        date=clock.now(),
        sender_id=99,
        is_outgoing=True,
        text="plain words",
        random_id=(1 << 62),  # the top of the range nodes draw their random ids from
    )
    _, message, _ = message_upsert(agent=agent, record=record)
    assert (message.text, message.redacted) == ("plain words", False)
