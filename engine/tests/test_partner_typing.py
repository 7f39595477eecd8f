"""While the DM partner types, the agent's reply waits; a message sent meanwhile joins the same turn."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import ActivityEvent, Conversation, TaskGraph, TaskNode
from conversations.transport.base import DialogUnreadMark, InboundMessage, NewMessage, PartnerTyping
from engine.ingest import ingest_updates
from engine.tests.harness import Harness
from sandbox.models import SandboxMember, SandboxMessage
from sandbox.services.chats import sandbox_say, sandbox_typing

pytestmark = pytest.mark.django_db


@pytest.fixture
def harness(agent, clock, fake_llm):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "sorry, I was baking"}]))
    h = Harness(clock)
    h.start()
    return h


def _reply_dates(agent) -> list[dt.datetime]:
    rows = SandboxMessage.objects.filter(sender__agent=agent).order_by("message_id")
    return [m.date for m in rows]


def _prompt_text(request) -> str:
    return json.dumps(request.json["contents"], ensure_ascii=False)


def test_the_reply_comes_after_the_typing_not_during(agent, harness, clock, fake_llm):
    start = clock.now()
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.ingest()
    sandbox_typing(agent=agent, as_name="Ann", seconds=30)
    harness.settle()

    (reply,) = _reply_dates(agent)
    assert reply >= start + dt.timedelta(seconds=30)
    assert len(fake_llm.requests) == 1
    held = ActivityEvent.objects.get(kind=ActivityEvent.Kind.TYPING, summary__contains="is typing")
    assert held.summary.startswith("Ann is typing: the reply waits")


def test_a_message_sent_while_typing_joins_the_same_turn(agent, harness, clock, fake_llm):
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.ingest()
    sandbox_typing(agent=agent, as_name="Ann", seconds=30)
    harness.settle(until=clock.now() + dt.timedelta(seconds=10))
    clock.advance(10)
    sandbox_say(agent=agent, text="are you free tonight?", as_name="Ann")
    harness.settle()

    assert len(fake_llm.requests) == 1
    prompt = _prompt_text(fake_llm.requests[0])
    assert "hi" in prompt and "are you free tonight?" in prompt
    assert len(_reply_dates(agent)) == 1
    assert Conversation.objects.get(peer_id__lt=7_000_000_000).partner_typing_until is None


def test_endless_typing_holds_the_reply_only_for_the_bounded_time(agent, harness, clock, settings):
    settings.CINDY_TYPING_WAIT_MAX_SECONDS = 60
    start = clock.now()
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.ingest()
    sandbox_typing(agent=agent, as_name="Ann", seconds=600)
    harness.settle()

    (reply,) = _reply_dates(agent)
    assert start + dt.timedelta(seconds=60) <= reply < start + dt.timedelta(seconds=120)


def test_typing_before_any_message_holds_the_reply_to_the_message_that_follows(agent, harness, clock):
    sandbox_say(agent=agent, text="hello", as_name="Ann")
    harness.settle()
    start = clock.now()
    sandbox_typing(agent=agent, as_name="Ann", seconds=20)
    harness.ingest()
    sandbox_say(agent=agent, text="one more thing", as_name="Ann")
    sandbox_typing(agent=agent, as_name="Ann", seconds=20)  # and types on
    harness.settle()

    assert _reply_dates(agent)[-1] >= start + dt.timedelta(seconds=20)


def test_sandbox_typing_command(agent, harness, clock):
    out = io.StringIO()
    call_command("sandbox", "typing", agent.name, "--as", "Ann", "--seconds", "20", stdout=out)

    assert out.getvalue() == "Ann is typing for 20 s\n"
    member = SandboxMember.objects.get(user__name="Ann")
    assert member.typing_until == clock.now() + dt.timedelta(seconds=20)
    with pytest.raises(CommandError, match="--seconds 601: give 0 \\(stop typing\\) to 600 seconds"):
        call_command("sandbox", "typing", agent.name, "--as", "Ann", "--seconds", "601")


def _dm_message(clock, message_id: int) -> NewMessage:
    return NewMessage(
        InboundMessage(
            peer_id=4321,
            chat_kind="dm",
            message_id=message_id,
            date=clock.now(),
            sender_id=4321,
            sender_name="Ann",
            text="hi",
        )
    )


def _received_not_before(agent) -> dt.datetime:
    """When the newest turn's `received` node may run."""
    return TaskNode.objects.filter(agent=agent, kind="received").latest("pk").not_before


def test_typing_recorded_later_in_the_same_batch_holds_the_reply(agent, clock, settings):
    settings.CINDY_READ_DELAY_SECONDS = 0
    ingest_updates(agent_id=agent.pk, updates=[_dm_message(clock, 1)])  # the conversation exists
    start = clock.now()

    ingest_updates(
        agent_id=agent.pk, updates=[_dm_message(clock, 2), PartnerTyping(peer_id=4321, seconds=30)]
    )

    assert _received_not_before(agent) >= start + dt.timedelta(seconds=30)


def test_a_message_with_no_typing_recorded_reads_no_typing_row(agent, clock, settings):
    settings.CINDY_READ_DELAY_SECONDS = 0
    ingest_updates(agent_id=agent.pk, updates=[_dm_message(clock, 1)])

    with CaptureQueriesContext(connection) as queries:
        ingest_updates(agent_id=agent.pk, updates=[_dm_message(clock, 2)])

    assert _received_not_before(agent) == clock.now()
    assert not [
        q for q in queries.captured_queries if "partner_typing_until` FROM" in q["sql"].replace('"', "`")
    ]


def test_a_message_ending_the_typing_frees_a_reply_another_update_of_the_batch_triggered(
    agent, clock, settings
):
    """An unread mark in a muted DM triggers the turn; the partner's message after it in the same batch
    is no callout there, but it ends their typing: the reply does not wait for that typing."""
    settings.CINDY_READ_DELAY_SECONDS = 0
    ingest_updates(agent_id=agent.pk, updates=[_dm_message(clock, 1)])
    TaskGraph.objects.filter(conversation__agent=agent).delete()
    start = clock.now()
    Conversation.objects.filter(agent=agent, peer_id=4321).update(
        muted=True, partner_typing_until=start + dt.timedelta(seconds=30)
    )

    ingest_updates(
        agent_id=agent.pk, updates=[DialogUnreadMark(peer_id=4321, unread=True), _dm_message(clock, 2)]
    )

    assert Conversation.objects.get(agent=agent, peer_id=4321).partner_typing_until is None
    assert _received_not_before(agent) < start + dt.timedelta(seconds=30)
