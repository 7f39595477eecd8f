"""Backfill against the loopback stand-in: the engine's backfill (engine/backfill.py) asks for pages,
the gateway's request step runs each `backfill_page` request through `TelethonTransport` (real
Telethon, messages.getHistory), and the pages land in the mirror and the recall index.

Where `manage.py backfill` polls the database for the gateway's answer, these tests run the
gateway's request step (claim, `execute_request`, finish: engine/tick_step.py's RequestsStep) at
that point, on the loop the transport is connected on.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import secrets
import threading
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command
from django.db import OperationalError, connections

from agents.models import GatewayRequest
from conversations.models import ActivityEvent, BackfillMark, Conversation, Message, TaskGraph
from engine.backfill import Backfill
from engine.requests import execute_request, request_finish, requests_claim
from recall.selectors import recall_search

from . import test_standin_transport as base
from .conftest import GATEWAY
from .test_standin_transport import connected

standin = base.standin
world = base.world

DAY = 86_400
TOTAL = 250  # messages in the chat: pages of 100, 100 and 50


@pytest.fixture
def chat(world):
    """A DM with a partner of this test only, whose 250 messages are one a day, the newest today;
    the mirror knows the chat (as the reconciler leaves it) but none of its messages."""
    standin, agent, me, _bob = world
    carol = standin.run(
        standin.world.create_user, phone=f"+99966{secrets.randbelow(10**5):05d}", first_name="Carol"
    )
    dm = standin.world.dm_key(me.id, carol.id)
    today = int(agent_now().timestamp())
    for n in range(1, TOTAL + 1):
        text = "we met at the lighthouse in Porto" if n == 10 else f"note {n} about kites"
        standin.run(standin.world.send, carol.id, dm, text, date=today - (TOTAL - n) * DAY)
    Conversation.objects.create(agent=agent, peer_id=carol.id, kind="dm", title="Carol")
    return standin, agent, carol


def agent_now() -> dt.datetime:
    from cindy_site.clock import now

    return now()


def _gateway_step(agent, transport):
    """What the command waits for: the gateway's request step, run here."""

    def wait(request_id: int) -> GatewayRequest:
        for request in requests_claim(agent_id=agent.pk, holder=GATEWAY):
            result, error = async_to_sync(execute_request)(request, transport)
            request_finish(request_id=request.pk, result=result, error=error)
        return GatewayRequest.objects.get(pk=request_id)

    return wait


def _backfill(agent, transport, *, since, clock, lines, stop_after_pages: int | None = None) -> Backfill:
    pages = []
    gateway = _gateway_step(agent, transport)

    def wait(request_id):
        done = gateway(request_id)
        pages.append(done)
        return done

    return Backfill(
        agent=agent,
        since=since,
        out=lines.append,
        wait=wait,
        pause=lambda seconds: _wait_out(clock, seconds),
        stopping=lambda: stop_after_pages is not None and len(pages) >= stop_after_pages,
    )


def _wait_out(clock, seconds: float) -> None:
    """A flood wait, waited out: the transport's pause runs on the injected clock; Telethon keeps
    its own record of the wait in wall time and refuses the method until it is over."""
    clock.advance(seconds)
    time.sleep(seconds)


def _stored(agent, peer_id) -> list[str]:
    return list(
        Message.objects.filter(conversation__agent=agent, conversation__peer_id=peer_id)
        .order_by("message_id")
        .values_list("text", flat=True)
    )


@pytest.mark.django_db(transaction=True)
def test_days_then_all_fill_the_mirror_and_recall_through_a_flood_wait(chat, clock):
    standin, agent, carol = chat
    lines: list[str] = []

    async def run():
        transport = await connected(agent)
        await transport.dialogs()  # the account's chats, as the reconciler reads them on connect
        since = agent_now() - dt.timedelta(days=30)
        recent = await sync_to_async(
            lambda: _backfill(agent, transport, since=since, clock=clock, lines=lines).run(
                [(carol.id, "Carol")]
            )
        )()
        standin.inject_flood_wait("messages.getHistory", 1)
        everything = await sync_to_async(
            lambda: _backfill(agent, transport, since=None, clock=clock, lines=lines).run(
                [(carol.id, "Carol")]
            )
        )()
        await transport.disconnect()
        return recent, everything

    [recent], [everything] = async_to_sync(run)()

    # --days 30: one page of 100 reaches back 99 days, past the 30 asked for.
    assert (recent.state, recent.pages, recent.fetched) == ("reached", 1, 100)
    # --all: the flood wait is waited out, then the two older pages; the short one is the beginning.
    assert (everything.state, everything.pages, everything.fetched, everything.waited) == (
        "complete",
        2,
        150,
        1,
    )
    assert any("Telegram asks to wait 1 s; waiting" in line for line in lines)
    assert lines[-1] == (
        f"{agent.name}: Carol ({carol.id}): 150 messages in 2 pages, back to "
        f"{agent_now() - dt.timedelta(days=TOTAL - 1):%Y-%m-%d %H:%M}, 1 s of flood waits; "
        "the whole chat is in the mirror"
    )

    stored = _stored(agent, carol.id)
    assert (
        len(stored) == TOTAL
        and stored[0] == "note 1 about kites"
        and stored[-1] == f"note {TOTAL} about kites"
    )
    mark = BackfillMark.objects.get(agent=agent, peer_id=carol.id)
    assert mark.complete and mark.fetched == TOTAL
    first = Message.objects.filter(conversation__peer_id=carol.id).order_by("message_id").first()
    assert mark.oldest_message_id == first.message_id and mark.oldest_date == first.date

    # Recall finds the oldest history; the backfill started no turn and wrote no message events.
    [hit] = recall_search(agent_id=agent.pk, query="lighthouse Porto")
    assert (hit.text, hit.message_id) == ("we met at the lighthouse in Porto", first.message_id + 9)
    assert not TaskGraph.objects.filter(conversation__agent=agent).exists()
    assert not ActivityEvent.objects.filter(agent=agent, kind__in=["message_in", "message_out"]).exists()
    getters = standin.calls_of("messages.getHistory")
    assert [c.error for c in getters].count("FLOOD_WAIT_1") == 1


@pytest.mark.django_db(transaction=True)
def test_an_interrupted_backfill_resumes_after_its_last_stored_page(chat, clock):
    standin, agent, carol = chat
    lines: list[str] = []

    async def run():
        transport = await connected(agent)
        await transport.dialogs()
        stopped = await sync_to_async(
            lambda: _backfill(agent, transport, since=None, clock=clock, lines=lines, stop_after_pages=1).run(
                [(carol.id, "Carol")]
            )
        )()
        mark = await sync_to_async(BackfillMark.objects.get)(agent=agent, peer_id=carol.id)
        before = len(standin.calls_of("messages.getHistory"))
        resumed = await sync_to_async(
            lambda: _backfill(agent, transport, since=None, clock=clock, lines=lines).run(
                [(carol.id, "Carol")]
            )
        )()
        again = await sync_to_async(
            lambda: _backfill(agent, transport, since=None, clock=clock, lines=lines).run(
                [(carol.id, "Carol")]
            )
        )()
        calls = standin.calls_of("messages.getHistory")[before:]
        await transport.disconnect()
        return stopped, mark, resumed, again, calls

    [stopped], mark, [resumed], [again], calls = async_to_sync(run)()
    assert (stopped.state, stopped.fetched) == ("interrupted", 100)
    assert not mark.complete and mark.fetched == 100
    # The next run asks for the page before the oldest stored message, not for the newest again.
    assert [c.request.offset_id for c in calls] == [mark.oldest_message_id, mark.oldest_message_id - 100]
    assert (resumed.state, resumed.fetched) == ("complete", 150)
    assert again.state == "already" and "an earlier run got here" in lines[-1]
    assert len(_stored(agent, carol.id)) == TOTAL


@pytest.mark.django_db(transaction=True)
def test_a_page_the_gateway_cannot_fetch_fails_the_chat_with_telegram_s_reason(world, clock):
    _standin, agent, _me, _bob = world
    stranger = 4_242_424_242  # no user of the stand-in: Telegram answers USER_ID_INVALID
    lines: list[str] = []

    async def run():
        transport = await connected(agent)
        backfill = _backfill(agent, transport, since=None, clock=clock, lines=lines)
        outcome = await sync_to_async(lambda: backfill.run([(stranger, "Nobody")]))()
        await transport.disconnect()
        return outcome

    [outcome] = async_to_sync(run)()
    assert outcome.state == "failed" and outcome.error == "Telegram refused: USER_ID_INVALID"
    assert lines[-1].startswith(f"{agent.name}: Nobody ({stranger}): 0 messages in 0 pages; failed: ")
    assert GatewayRequest.objects.get(agent=agent, kind="backfill_page").status == "failed"
    assert not BackfillMark.objects.filter(agent=agent).exists()


def _shared_cache_retry(write):
    """`write`, tried again while SQLite says "database table is locked". On a SQLite run the test
    database lives in memory with a shared cache, where a connection that meets another's lock
    fails at once instead of waiting out the busy timeout as a file database's does; this thread
    and the command's polls meet so now and then. A file database (or MariaDB) never gets here."""

    def tried(**kwargs):
        for attempt in range(50):
            try:
                return write(**kwargs)
            except OperationalError as exc:
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.02)  # the other connection's statement ends within milliseconds

    return tried


@pytest.mark.django_db(transaction=True)
def test_the_command_backfills_through_a_running_gateway_and_says_what_it_did(chat):
    """`manage.py backfill` as an operator runs it: the command here, and the gateway's request step
    on a thread of its own with its Telethon connection, serving the page requests as they come."""
    standin, agent, carol = chat
    stop, ready, errors = threading.Event(), threading.Event(), []

    async def serve():
        transport = await connected(agent)
        await transport.dialogs()
        ready.set()
        while not stop.is_set():
            claimed = await sync_to_async(_shared_cache_retry(requests_claim))(
                agent_id=agent.pk, holder=GATEWAY
            )
            for request in claimed:
                result, error = await execute_request(request, transport)
                await sync_to_async(_shared_cache_retry(request_finish))(
                    request_id=request.pk, result=result, error=error
                )
            if not claimed:
                await asyncio.sleep(0.05)  # the gateway's idle tick
        await transport.disconnect()

    def gateway() -> None:
        try:
            async_to_sync(serve)()
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)
            ready.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=gateway)
    thread.start()
    try:
        assert ready.wait(60) and not errors, errors
        out = io.StringIO()
        try:
            call_command("backfill", agent.name, "--days", "120", stdout=out)
            call_command("backfill", agent.name, "--days", "120", stdout=out)
        except Exception as exc:
            # A gateway thread that died leaves the command waiting: its error is the cause.
            raise AssertionError(f"the gateway thread's errors: {errors!r}") from exc
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors
    # A progress line ("...; going on") comes when a page took longer than PROGRESS_SECONDS, which
    # depends on the machine's load: it is checked for its form, the rest for their order.
    printed = out.getvalue().splitlines()
    progress = [line for line in printed if line.endswith("; going on")]
    for line in progress:
        assert line.startswith(f"{agent.name}: Carol ({carol.id}): 100 messages in 1 pages, back to "), line
    lines = [line for line in printed if not line.endswith("; going on")]
    assert lines[0] == f"{agent.name}: backfilling 1 chat to the last 120 days"
    assert lines[1].startswith(f"{agent.name}: Carol ({carol.id}): 200 messages in 2 pages, back to ")
    assert lines[1].endswith("; reached the date asked for")
    assert lines[2] == f"{agent.name}: 200 messages fetched from 1 of 1 chats (reached 1)"
    assert lines[4].endswith("; nothing to do: an earlier run got here")
    assert lines[5] == f"{agent.name}: 0 messages fetched from 1 of 1 chats (already 1)"
    assert len(_stored(agent, carol.id)) == 200
    assert not GatewayRequest.objects.filter(agent=agent, kind="backfill_page").exists()  # read, then dropped
