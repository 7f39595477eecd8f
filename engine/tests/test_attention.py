"""Attention as the original pays it: marked-unread dialogs, muted chats' callouts, the unread scan."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from asgiref.sync import async_to_sync
from django.core.management import CommandError, call_command

from conversations.models import Conversation, TaskGraph
from conversations.transport.base import FloodWait
from engine.attention import UNDELIVERED_AFTER_SECONDS, unread_scan
from engine.tests.harness import Harness
from sandbox.models import SandboxMember, SandboxMessage, SandboxUpdate
from sandbox.services.chats import (
    sandbox_group,
    sandbox_mark_unread,
    sandbox_person,
    sandbox_say,
    sandbox_set_reaction,
    sandbox_user_for_agent,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def harness(agent, clock, fake_llm):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "Here I am."}]))
    h = Harness(clock)
    h.start()
    return h


def _scan(harness, agent, marks=None):
    transport = harness.gateway.clients[agent.pk].transport
    return async_to_sync(unread_scan)(
        agent_id=agent.pk, transport=transport, marks={} if marks is None else marks
    )


def _drop_update(message: SandboxMessage) -> None:
    """The message reached "Telegram", but its update is lost on the way to the gateway."""
    SandboxUpdate.objects.filter(chat=message.chat, message_id=message.message_id).delete()


def _late_update(message: SandboxMessage) -> None:
    SandboxUpdate.objects.create(
        chat=message.chat,
        kind=SandboxUpdate.Kind.NEW_MESSAGE,
        message_id=message.message_id,
        actor=message.sender,
        created=message.date,
    )


def _answered(agent) -> list[str]:
    return list(
        SandboxMessage.objects.filter(sender__agent=agent).order_by("id").values_list("text", flat=True)
    )


def test_a_marked_unread_dialog_is_answered_once_and_the_mark_cleared(agent, harness, fake_llm):
    sandbox_say(agent=agent, text="see you at the market", as_name="Ann")
    harness.settle()
    assert _answered(agent) == ["Here I am."]

    out = io.StringIO()
    call_command("sandbox", "mark-unread", agent.name, "--as", "Ann", stdout=out)
    assert "unread" in out.getvalue()
    harness.settle()

    assert _answered(agent) == ["Here I am.", "Here I am."]
    assert len(fake_llm.requests) == 2
    me = sandbox_user_for_agent(agent=agent)
    assert not SandboxMember.objects.get(user=me, chat__kind="dm").unread_mark
    # The scan after the answer finds nothing more to do.
    assert _scan(harness, agent).graph_ids == []


def test_mark_unread_names_the_fix_when_there_is_no_chat(agent, harness):
    with pytest.raises(CommandError, match="say something there first"):
        call_command("sandbox", "mark-unread", agent.name, "--as", "Nobody")


def test_a_muted_dm_answers_a_mention_not_plain_talk(agent, harness, fake_llm):
    sandbox_say(agent=agent, text="hello", as_name="Ann")
    harness.settle()
    Conversation.objects.update(muted=True)

    sandbox_say(agent=agent, text="just thinking out loud", as_name="Ann")
    harness.settle()
    assert len(fake_llm.requests) == 1

    me = sandbox_user_for_agent(agent=agent)
    sandbox_say(agent=agent, text=f"@{me.username} what do you think?", as_name="Ann")
    harness.settle()
    assert len(fake_llm.requests) == 2


def test_a_muted_group_answers_its_mention_only(agent, harness, fake_llm):
    me = sandbox_user_for_agent(agent=agent)
    ann = sandbox_person(name="Ann")
    group = sandbox_group(title="Allotment", members=[me, ann])
    SandboxMember.objects.filter(chat=group, user=me).update(muted=True)
    sandbox_say(agent=agent, text="the leeks are up", as_name="Ann", group="Allotment")
    harness.settle()
    Conversation.objects.filter(peer_id=group.peer_id).update(muted=True)
    sandbox_say(agent=agent, text="anyone got twine?", as_name="Ann", group="Allotment")
    harness.settle()
    assert fake_llm.requests == []

    sandbox_say(agent=agent, text=f"@{me.username} have you got twine?", as_name="Ann", group="Allotment")
    harness.settle()
    assert len(fake_llm.requests) == 1


def test_the_scan_answers_a_message_no_update_delivered_exactly_once(agent, harness, clock, fake_llm):
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    lost = sandbox_say(agent=agent, text="did you get my letter?", as_name="Ann")
    _drop_update(lost)
    harness.settle()
    assert len(fake_llm.requests) == 1  # nobody told the gateway

    assert _scan(harness, agent).graph_ids == []  # too young to call lost: its update may be coming
    clock.advance(UNDELIVERED_AFTER_SECONDS + 1)
    report = _scan(harness, agent)
    assert report.fetched == 1 and len(report.graph_ids) == 1
    harness.settle()
    assert len(fake_llm.requests) == 2
    assert "did you get my letter?" in json.dumps(fake_llm.requests[1].json, ensure_ascii=False)

    _late_update(lost)  # the update turns up after all
    harness.settle()
    assert _scan(harness, agent).graph_ids == []
    assert len(fake_llm.requests) == 2
    assert _answered(agent) == ["Here I am.", "Here I am."]


def test_the_scan_answers_an_unread_mark_no_update_delivered(agent, harness, clock, fake_llm):
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    sandbox_mark_unread(agent=agent, as_name="Ann")
    SandboxUpdate.objects.filter(kind=SandboxUpdate.Kind.UNREAD_MARK).delete()
    harness.settle()
    assert len(fake_llm.requests) == 1

    marks: dict = {}
    assert len(_scan(harness, agent, marks).graph_ids) == 1
    assert _scan(harness, agent, marks).graph_ids == []  # the answer is on its way: not twice
    harness.settle()
    assert len(fake_llm.requests) == 2
    assert _scan(harness, agent, marks).graph_ids == []


def test_the_scan_finds_a_reaction_no_update_delivered(agent, harness, clock, fake_llm):
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    reply = SandboxMessage.objects.get(sender__agent=agent)
    sandbox_set_reaction(message=reply, user=sandbox_person(name="Ann"), emoji="❤")
    SandboxUpdate.objects.filter(kind=SandboxUpdate.Kind.REACTION).delete()
    harness.settle()
    assert len(fake_llm.requests) == 1

    report = _scan(harness, agent)
    assert len(report.graph_ids) == 1
    assert TaskGraph.objects.get(pk=report.graph_ids[0]).trigger == "reaction"
    harness.settle()
    assert len(fake_llm.requests) == 2
    assert _scan(harness, agent).graph_ids == []


def test_a_muted_chat_without_callouts_gives_the_scan_nothing_to_answer(agent, harness, clock, fake_llm):
    sandbox_say(agent=agent, text="hello", as_name="Ann")
    harness.settle()
    Conversation.objects.update(muted=True)
    lost = sandbox_say(agent=agent, text="plain talk", as_name="Ann")
    _drop_update(lost)
    clock.advance(UNDELIVERED_AFTER_SECONDS + 1)

    report = _scan(harness, agent)
    assert report.fetched == 1 and report.graph_ids == []


class _FloodingTransport:
    def __init__(self) -> None:
        self.calls = 0

    async def dialogs(self, *, limit: int = 100):
        self.calls += 1
        raise FloodWait(120)


def test_a_flood_wait_moves_the_agents_next_scan_and_the_step_never_waits(agent, harness, clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = 10
    gateway = harness.gateway
    client = gateway.clients[agent.pk]
    flooding = _FloodingTransport()
    client.transport = flooding

    async def run() -> None:
        assert gateway.steps["attention"].start_due() is False  # connected just now: the first scan is spread
        state = gateway.steps["attention"].scans[agent.pk]
        clock.advance(6)
        assert gateway.steps["attention"].start_due() is True
        await state.task
        assert flooding.calls == 1
        clock.advance(60)
        assert gateway.steps["attention"].start_due() is False  # still inside Telegram's wait
        clock.advance(61)
        assert gateway.steps["attention"].start_due() is True
        await state.task
        assert flooding.calls == 2
        await gateway.steps["attention"].stop()

    asyncio.run(run())


def test_a_slow_scan_does_not_hold_up_the_step(agent, harness, clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = 10
    gateway = harness.gateway
    release = None

    class _Slow:
        async def dialogs(self, *, limit: int = 100):
            await release.wait()
            return []

    gateway.clients[agent.pk].transport = _Slow()

    async def run() -> None:
        nonlocal release
        release = asyncio.Event()
        gateway.steps["attention"].start_due()
        clock.advance(6)
        assert gateway.steps["attention"].start_due() is True  # returns while the scan waits on Telegram
        state = gateway.steps["attention"].scans[agent.pk]
        assert not state.task.done()
        clock.advance(20)
        assert gateway.steps["attention"].start_due() is False  # one scan per agent at a time
        release.set()
        await state.task
        await gateway.steps["attention"].stop()

    asyncio.run(run())


def test_a_reconnect_brings_the_next_scan_forward(agent, harness, clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = 600
    gateway = harness.gateway
    client = gateway.clients[agent.pk]

    async def run() -> None:
        gateway.steps["attention"].start_due()
        clock.advance(6)
        assert gateway.steps["attention"].start_due() is True
        state = gateway.steps["attention"].scans[agent.pk]
        await state.task
        clock.advance(60)
        assert gateway.steps["attention"].start_due() is False  # the next scan is ten minutes away
        client.connected = False  # the connection broke (the ingest step) ...
        await gateway.steps["attention"].run()
        client.connected = True  # ... and the connect step reconnected and reconciled
        gateway.steps["attention"].start_due()
        clock.advance(6)
        assert gateway.steps["attention"].start_due() is True  # a scan soon after the reconnect
        await state.task
        await gateway.steps["attention"].stop()

    asyncio.run(run())


def test_a_started_scan_is_no_work_for_the_pass_and_wakes_the_gateway_once_it_stores_a_graph(
    agent, harness, clock, settings, monkeypatch
):
    """Starting a scan is not work a follow-up pass could use (its result comes later, in its own
    task): the step says it did nothing, so the gateway waits instead of running a pass at once; the
    scan that stored a graph wakes the gateway when it ends."""
    settings.CINDY_UNREAD_SCAN_SECONDS = 10
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    _drop_update(sandbox_say(agent=agent, text="did you get my letter?", as_name="Ann"))
    harness.settle()
    step = harness.gateway.steps["attention"]
    wakeup = harness.gateway.context.wakeup

    async def no_flags(*_args) -> None:  # a first scan's dialog flags may wake the gateway too
        return None

    monkeypatch.setattr(step, "_scan_flags", no_flags)

    async def run() -> None:
        assert await step.run() is False  # connected just now: the first scan is spread
        clock.advance(UNDELIVERED_AFTER_SECONDS + 6)
        wakeup.clear()
        assert await step.run() is False
        state = step.scans[agent.pk]
        assert state.task is not None
        assert not wakeup.is_set()
        await state.task
        assert wakeup.is_set()  # the scan stored the lost message's graph: the tick's to claim
        await step.stop()

    async_to_sync(run)()  # the scan's database work runs in this thread, on the test database
    assert TaskGraph.objects.filter(conversation__agent=agent, finished__isnull=True).count() == 1
