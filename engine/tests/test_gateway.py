"""Gateway steps: the client supervisor, the reconciler, gateway requests, edits and deletions."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from asgiref.sync import async_to_sync

from agents.models import GatewayRequest
from conversations.models import ActivityEvent, Conversation, Message, TaskGraph
from conversations.services.ingest import conversation_apply_details
from conversations.transport.base import TransportError
from engine.tests.harness import Harness
from sandbox.models import SandboxMember, SandboxMessage, SandboxUpdate
from sandbox.services.chats import sandbox_person, sandbox_say, sandbox_transcript
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db


class UnreliableSandbox(SandboxTransport):
    """The sandbox whose connection drops the first `drops` times it is used."""

    drops = 0
    sends_then_fail = 0

    async def connect(self):
        if UnreliableSandbox.drops:
            UnreliableSandbox.drops -= 1
            raise TransportError("connection refused")
        return await super().connect()

    async def poll_updates(self):
        if UnreliableSandbox.drops:
            UnreliableSandbox.drops -= 1
            raise TransportError("connection reset")
        return await super().poll_updates()

    async def send_text(self, peer_id, text, *, random_id, reply_to=None):
        sent = await super().send_text(peer_id, text, random_id=random_id, reply_to=reply_to)
        if UnreliableSandbox.sends_then_fail:
            UnreliableSandbox.sends_then_fail -= 1
            raise TransportError("connection lost before the answer arrived")
        return sent


@pytest.fixture
def unreliable(agent, clock, fake_llm):
    UnreliableSandbox.drops = 0
    UnreliableSandbox.sends_then_fail = 0
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "hello back"}]))
    return Harness(
        clock, transport_factory=lambda a, gateway_id="": UnreliableSandbox(a, gateway_id=gateway_id)
    )


def test_a_client_that_fails_to_connect_is_restarted_with_backoff(agent, unreliable, clock):
    UnreliableSandbox.drops = 2
    unreliable.start()
    client = unreliable.gateway.clients[agent.pk]
    assert not client.connected and client.failures == 1
    assert unreliable.step("connect") is False  # still backing off
    clock.advance(2)
    unreliable.step("connect")
    assert not client.connected and client.failures == 2
    clock.advance(3.9)
    assert unreliable.step("connect") is False  # the backoff doubled to 4 s
    clock.advance(0.1)
    assert unreliable.step("connect") is True
    assert client.connected and client.failures == 0
    assert ActivityEvent.objects.filter(kind="agent_online").count() == 1


def test_messages_missed_while_disconnected_are_caught_up_and_answered(agent, unreliable, clock):
    unreliable.start()
    sandbox_say(agent=agent, text="first")
    unreliable.settle()
    UnreliableSandbox.drops = 1
    unreliable.ingest()  # the connection drops
    # The update log is not replayed after a reconnect; history fills the gap.
    sandbox_say(agent=agent, text="did you get this?")
    SandboxUpdate.objects.all().delete()
    clock.advance(2)
    unreliable.step("connect")
    unreliable.settle()
    assert sandbox_transcript(agent=agent) == [
        "You: first",
        "Wendy: hello back",
        "You: did you get this?",
        "Wendy: hello back",
    ]
    assert Message.objects.filter(text="did you get this?").count() == 1


def test_a_first_start_records_old_history_and_answers_only_unread_messages(
    agent, other_agent, clock, fake_llm
):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "sorry for the wait"}]))
    sandbox_say(agent=agent, text="old and answered", as_name="Alice")
    SandboxMember.objects.filter(user__agent=agent).update(read_up_to=1)
    sandbox_say(agent=agent, text="unread one", as_name="Bob")
    harness = Harness(clock)
    harness.start()
    harness.settle()
    assert sandbox_transcript(agent=agent, as_name="Alice") == ["Alice: old and answered"]
    assert sandbox_transcript(agent=agent, as_name="Bob") == ["Bob: unread one", "Wendy: sorry for the wait"]


def test_a_send_whose_answer_was_lost_is_retried_without_a_duplicate(agent, unreliable, settings):
    UnreliableSandbox.sends_then_fail = 1
    unreliable.start()
    sandbox_say(agent=agent, text="hi")
    unreliable.settle()
    assert sandbox_transcript(agent=agent) == ["You: hi", "Wendy: hello back"]
    assert ActivityEvent.objects.filter(kind="node_retried").count() == 1


def test_edits_and_deletions_are_recorded(agent, unreliable):
    unreliable.start()
    message = sandbox_say(agent=agent, text="helo")
    unreliable.settle()
    message.text, message.edited = "hello", True
    message.save()
    SandboxUpdate.objects.create(
        chat=message.chat, kind="edit", message_id=message.message_id, created=message.date
    )
    unreliable.ingest()
    mirrored = Message.objects.get(message_id=message.message_id, is_agent=False)
    assert mirrored.text == "hello" and mirrored.edited
    SandboxMessage.objects.filter(pk=message.pk).update(deleted=True)
    SandboxUpdate.objects.create(
        chat=message.chat, kind="delete", message_id=message.message_id, created=message.date
    )
    unreliable.ingest()
    mirrored.refresh_from_db()
    assert mirrored.deleted
    kinds = set(ActivityEvent.objects.values_list("kind", flat=True))
    assert {"message_edited", "message_deleted"} <= kinds
    assert TaskGraph.objects.count() == 1  # edits and deletions do not trigger


def test_a_send_otp_request_is_sent_by_the_gateway_holding_the_agent(agent, unreliable, clock):
    unreliable.start()
    operator = sandbox_person(name="Operator")
    request = GatewayRequest.objects.create(
        agent=agent,
        kind=GatewayRequest.Kind.SEND_OTP,
        params={"user_id": operator.user_id, "text": "Your code is 123456"},
        created=clock.now(),
    )
    assert unreliable.step("requests") is True
    request.refresh_from_db()
    assert request.status == GatewayRequest.Status.DONE and request.result["message_id"] == 1
    assert sandbox_transcript(agent=agent, as_name="Operator") == ["Wendy: Your code is 123456"]
    assert unreliable.step("requests") is False


def test_a_bad_gateway_request_fails_with_a_readable_error(agent, unreliable, clock):
    unreliable.start()
    request = GatewayRequest.objects.create(
        agent=agent, kind=GatewayRequest.Kind.SEND_OTP, params={"text": "no user"}, created=clock.now()
    )
    unreliable.step("requests")
    request.refresh_from_db()
    assert request.status == GatewayRequest.Status.FAILED
    assert request.error == f"Send a one-time code request {request.pk} is missing parameter 'user_id'"


def test_a_telegram_agent_that_is_not_logged_in_is_stopped_with_the_fix(agent, clock, settings):
    from agents.models import Agent, Transport
    from engine.transports import transport_for

    settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH = "12345", "0123456789abcdef0123456789abcdef"
    Agent.objects.filter(pk=agent.pk).update(transport=Transport.TELEGRAM)
    harness = Harness(clock, transport_factory=transport_for)
    harness.start()

    stopped = Agent.objects.get(pk=agent.pk)
    assert stopped.stopped
    assert f"python manage.py telegram_login {agent.name}" in stopped.last_error
    event = ActivityEvent.objects.get(kind="agent_error", agent=agent)
    assert f"telegram_login {agent.name}" in event.summary
    assert "NOT_READY" not in event.summary


def test_a_flood_wait_while_connecting_waits_as_long_as_telegram_asks(agent, clock):
    from conversations.transport.base import FloodWait

    class FloodedSandbox(SandboxTransport):
        floods = 1

        async def connect(self):
            if FloodedSandbox.floods:
                FloodedSandbox.floods -= 1
                raise FloodWait(120)
            return await super().connect()

    harness = Harness(
        clock, transport_factory=lambda a, gateway_id="": FloodedSandbox(a, gateway_id=gateway_id)
    )
    harness.start()
    client = harness.gateway.clients[agent.pk]
    assert not client.connected
    clock.advance(119)
    assert harness.step("connect") is False  # no call before Telegram's wait is over
    clock.advance(1)
    assert harness.step("connect") is True and client.connected


def test_a_chat_whose_first_reconcile_was_cut_off_is_read_and_answered_on_the_next(agent, clock, fake_llm):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "here now"}]))
    sandbox_say(agent=agent, text="anyone?", as_name="Bob")
    # The killed gateway had applied the dialog list (creating the conversation) but read no history.
    dead = SandboxTransport(agent, gateway_id="gw-dead")
    async_to_sync(dead.connect)()
    dialogs = async_to_sync(dead.dialogs)()
    for details in dialogs:
        conversation_apply_details(agent=agent, details=details)
    assert Conversation.objects.filter(agent=agent).exists() and not Message.objects.exists()

    harness = Harness(clock)
    harness.start()
    harness.settle()
    assert sandbox_transcript(agent=agent, as_name="Bob") == ["Bob: anyone?", "Wendy: here now"]


class Reporting(SandboxTransport):
    """A sandbox transport that, as Telethon's, says in memory whether it has updates and reports
    their arrival (`on_update`): the test counts how often the gateway asks it."""

    on_update = None
    asked: ClassVar[list[str]] = []

    @property
    def poll_pending(self) -> bool:
        Reporting.asked.append(self.agent.name)
        return True


def test_a_follow_up_pass_asks_only_the_transports_that_reported_updates(clock):
    from engine.tests.cast import make_agent

    names = ["Ann", "Bea", "Cat"]
    for i, name in enumerate(names):
        make_agent(name, phone=f"+1555000010{i}")
    harness = Harness(clock, transport_factory=lambda a, gateway_id="": Reporting(a, gateway_id=gateway_id))
    harness.start()
    context = harness.gateway.context
    Reporting.asked.clear()
    harness.step("ingest")  # a full pass asks every connected client
    assert sorted(Reporting.asked) == names
    Reporting.asked.clear()
    context.follow_up = True
    harness.step("ingest")
    assert Reporting.asked == []  # none reported anything
    bea = next(c for c in context.clients.values() if c.agent.name == "Bea")
    bea.transport.on_update()  # wired by the gateway: notes Bea
    assert context.updated == {bea.agent.id}
    harness.step("ingest")
    assert Reporting.asked == ["Bea"]
    assert context.updated == set()  # polled: the next follow-up pass asks no one again
    Reporting.asked.clear()
    harness.step("ingest")
    assert Reporting.asked == []


def test_a_tick_that_claimed_as_many_nodes_as_its_cap_does_not_settle_the_pass(
    agent, clock, settings, monkeypatch
):
    """More may be due than one tick claims: the pass right after it claims the rest at once."""
    import engine.tick_step

    settings.CINDY_READ_DELAY_SECONDS = 0
    harness = Harness(clock)
    harness.start()
    monkeypatch.setattr(engine.tick_step, "MAX_NODES_PER_TICK", 1)
    sandbox_say(agent=agent, text="hello there")
    harness.ingest()
    assert harness.tick()
    assert len(harness.queued) == 1
    assert harness.gateway.steps["tick"].only_planned is False
