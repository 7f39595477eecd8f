"""Wake-ups: writers bump after commit, the gateway's idle wait ends on a wake-up or the next due timer.

The loop tests drive `Gateway.run` on a FakeClock: the idle pause is replaced by one that moves the
clock by the time asked, so what is checked is how long the gateway *would* have slept, never how long
anything took.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import os

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import TestCase

from agents.models import AgentLease, GatewayRequest, TelegramDevice
from agents.services.telegram_requests import conversation_request_leave
from cindy_site.clock import FakeClock
from conversations.models import Conversation, GatewayWake, Message, NodeStatus, TaskNode
from conversations.selectors import node_next_due_at
from conversations.services.graphs import graph_replan
from conversations.services.wake import WAKE_TURN, wake_counter, wake_gateway, wake_gateways, wake_not_needed
from engine.gateway import Gateway
from engine.idle_wait import IdleWait
from engine.tests.harness import Harness
from engine.tests.processes import plan
from engine.wake import DbWake, RedisWake, Wakeup, wake_listener
from sandbox.services.chats import sandbox_post, sandbox_say, sandbox_user_for_agent
from sandbox.transport.transport import SandboxTransport

REDIS_URL = os.environ.get("CINDY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def counted(callbacks) -> int:
    """The wake-ups among `callbacks`: to every gateway, or to the holders of some agents."""
    return sum(1 for callback in callbacks if getattr(callback, "func", callback) is wake_gateways)


# --- the signal -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_wake_row_round_trip_on_the_database():
    woken: list[bool] = []
    listener = DbWake(threaded=False)
    listener._notify = woken.append  # what start() installs: set the event, full or for a turn
    assert listener.poll() is False  # the first read only sets the baseline
    wake_gateways()
    assert listener.poll() is True
    assert listener.poll() is False  # one wake-up is seen once
    assert woken == [True]
    GatewayWake.objects.all().delete()  # a flushed database: the next bump creates the row again
    wake_gateways()
    assert GatewayWake.objects.get().counter == 1


@pytest.mark.django_db
def test_a_turn_wake_up_on_the_database_asks_for_a_turn_and_a_full_one_beside_it_wins(agent, clock):
    AgentLease.objects.create(
        agent=agent,
        holder="gw-turns",
        acquired_at=clock.now(),
        heartbeat_at=clock.now(),
        expires_at=clock.now() + dt.timedelta(hours=1),
    )
    woken: list[bool] = []
    listener = DbWake(threaded=False, gateway_id="gw-turns")
    listener._notify = woken.append
    listener.poll()
    wake_gateways([agent.pk], turn=True)
    assert listener.poll() is True
    wake_gateways([agent.pk], turn=True)
    wake_gateways([agent.pk])  # between two reads: the full one is what the gateway gets
    assert listener.poll() is True
    assert woken == [False, True]
    row = GatewayWake.objects.get(gateway="gw-turns")
    assert (row.counter, row.turns) == (1, 2)


def test_the_wake_up_event_is_full_unless_every_reason_since_it_was_cleared_was_a_turn():
    event = Wakeup()
    event.set_turn()
    assert event.is_set() and not event.full
    event.set()
    event.set_turn()
    assert event.full
    event.clear()
    assert not event.is_set() and not event.full


@pytest.mark.django_db(transaction=True)
def test_the_poll_thread_sets_the_gateways_event_when_the_counter_moves():
    async def scenario() -> None:
        event = asyncio.Event()
        listener = DbWake(poll_seconds=0.01)
        await listener.start(event)
        try:
            await asyncio.get_running_loop().run_in_executor(None, wake_gateways)
            await asyncio.wait_for(event.wait(), 30)  # a guard against a hang only
        finally:
            await listener.stop()
        assert listener._thread is None

    asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_a_writer_on_this_host_wakes_the_poll_thread_at_once_however_long_its_poll(monkeypatch):
    """With a poll of a minute, the writer's datagram still gets the counter read at once; stopping
    interrupts the thread's wait too."""
    import shutil
    import tempfile

    short = tempfile.mkdtemp(prefix="cw", dir="/tmp")  # sockets of this test only (paths must be short)
    monkeypatch.setattr(tempfile, "tempdir", short)

    async def scenario() -> None:
        event = asyncio.Event()
        listener = DbWake(poll_seconds=60)
        await listener.start(event)
        try:
            for _ in range(3000):  # the thread binds its socket first
                if listener._listener is not None:
                    break
                await asyncio.sleep(0.01)
            await asyncio.get_running_loop().run_in_executor(None, wake_gateways)
            await asyncio.wait_for(event.wait(), 30)  # a guard against a hang only
        finally:
            await asyncio.wait_for(listener.stop(), 30)
        assert listener._thread is None

    try:
        asyncio.run(scenario())
    finally:
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.django_db
def test_no_wake_up_is_sent_with_wake_ups_off_or_from_the_gateways_own_writes(settings):
    before = wake_counter()
    with wake_not_needed():
        wake_gateways()
    settings.CINDY_WAKE = False
    wake_gateways()
    assert wake_counter() == before
    assert wake_listener() is None


@pytest.fixture
def redis_wake(settings):
    """Wake-ups over the Redis server of the tests (skipped, saying why, where there is none)."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis server at {REDIS_URL} (set CINDY_TEST_REDIS_URL): {exc!r}")
    settings.REDIS_URL = REDIS_URL


@pytest.mark.django_db
def test_the_redis_round_trip(redis_wake):
    listener = wake_listener()
    assert isinstance(listener, RedisWake)
    before = wake_counter()

    async def scenario() -> None:
        event = asyncio.Event()
        await listener.start(event)
        try:
            await asyncio.wait_for(listener.subscribed.wait(), 30)  # a guard against a hang only
            event.clear()  # (re)subscribing sets it once, for what may have been missed
            # From another thread with a fresh context, as a writer in another process would.
            await asyncio.get_running_loop().run_in_executor(None, wake_gateways)
            await asyncio.wait_for(event.wait(), 30)
        finally:
            await listener.stop()

    asyncio.run(scenario())
    assert wake_counter() == before  # with Redis the database row is not touched


@pytest.mark.django_db
def test_the_redis_round_trip_of_a_turn_wake_up(redis_wake):
    listener = wake_listener("gw-redis-turns")

    async def scenario() -> tuple[bool, bool]:
        event = Wakeup()
        await listener.start(event)
        try:
            await asyncio.wait_for(listener.subscribed.wait(), 30)  # a guard against a hang only
            event.clear()  # (re)subscribing sets it once, for a full pass
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: wake_gateway("gw-redis-turns", turn=True)
            )
            await asyncio.wait_for(event.wait(), 30)
            turn = not event.full
            event.clear()
            await asyncio.get_running_loop().run_in_executor(None, lambda: wake_gateway("gw-redis-turns"))
            await asyncio.wait_for(event.wait(), 30)
            return turn, event.full
        finally:
            await listener.stop()

    assert asyncio.run(scenario()) == (True, True)


@pytest.mark.django_db
def test_a_redis_subscription_whose_socket_failed_is_taken_again_without_freezing_the_loop(
    redis_wake, monkeypatch
):
    """A socket failed with ETIMEDOUT (a link down for long): redis-py 8 then answers every read of
    it at once with "no message", and its `listen()` spun on that without yielding, freezing the
    gateway's event loop. The listener must notice, subscribe again, and the loop must go on."""
    import errno
    import threading

    from redis.asyncio.client import PubSub

    subscriptions: list[PubSub] = []
    subscribe = PubSub.subscribe

    async def recorded(self, *args, **kwargs):
        subscriptions.append(self)
        return await subscribe(self, *args, **kwargs)

    monkeypatch.setattr(PubSub, "subscribe", recorded)
    listener = RedisWake(REDIS_URL, read_seconds=5)
    done = threading.Event()
    outcome: list[object] = []

    async def scenario() -> None:
        event = Wakeup()
        await listener.start(event)
        try:
            await asyncio.wait_for(listener.subscribed.wait(), 30)
            # What asyncio's transport does when the kernel fails the socket: the stream keeps the
            # error and raises it on every read (redis-py keeps the reader privately).
            subscriptions[0].connection._reader.set_exception(
                TimeoutError(errno.ETIMEDOUT, os.strerror(errno.ETIMEDOUT))
            )
            while len(subscriptions) < 2 or not listener.subscribed.is_set():
                await asyncio.sleep(0.05)  # the loop runs: the listener let go of the dead socket
            event.clear()
            await asyncio.get_running_loop().run_in_executor(None, wake_gateways)
            await asyncio.wait_for(event.wait(), 30)
            outcome.append("woken")
        except BaseException as exc:  # reported to the test's thread
            outcome.append(exc)
        finally:
            await listener.stop()
            done.set()

    # On a thread of its own: a frozen loop then fails this test instead of hanging the run.
    threading.Thread(target=asyncio.run, args=(scenario(),), daemon=True).start()
    assert done.wait(30), "the subscription's event loop froze on the failed socket"
    assert outcome == ["woken"]


class QuietPubSub:
    """A subscription whose reads bring `replies` in turn (None: a window that passes with nothing),
    then only quiet windows; with `at_once`, an empty read returns without waiting."""

    def __init__(self, replies=(), *, at_once: bool = False) -> None:
        self.replies = list(replies)
        self.at_once = at_once
        self.pings = 0

    async def get_message(self, timeout: float):
        reply = self.replies.pop(0) if self.replies else None
        if reply is None and not self.at_once:
            await asyncio.sleep(timeout)
        return reply

    async def ping(self) -> None:
        self.pings += 1


def test_a_quiet_subscription_is_pinged_and_lost_when_the_ping_goes_unanswered():
    listener = RedisWake(REDIS_URL, read_seconds=0.01)
    pubsub = QuietPubSub()
    with pytest.raises(ConnectionError, match="no answer to a PING"):
        asyncio.run(listener._read(pubsub, Wakeup()))
    assert pubsub.pings == 1


def test_an_answered_ping_or_a_message_keeps_the_subscription():
    listener = RedisWake(REDIS_URL, read_seconds=0.01)
    pong, turn = {"type": "pong", "data": b""}, {"type": "message", "data": WAKE_TURN}
    pubsub = QuietPubSub([None, pong, None, turn])
    event = Wakeup()
    with pytest.raises(ConnectionError, match="no answer to a PING"):
        asyncio.run(listener._read(pubsub, event))
    assert pubsub.pings == 3  # each quiet window after an answer pings again; the third goes unanswered
    assert event.is_set() and not event.full  # the message came through, as a turn's wake-up


def test_a_read_that_returns_nothing_at_once_ends_the_subscription():
    listener = RedisWake(REDIS_URL, read_seconds=5)
    pubsub = QuietPubSub(at_once=True)
    with pytest.raises(ConnectionError, match="returned at once"):
        asyncio.run(listener._read(pubsub, Wakeup()))
    assert pubsub.pings == 0


# --- writers bump after their commit ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_sandbox_message_wakes_the_gateways_after_its_commit(agent):
    before = wake_counter()
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        sandbox_say(agent=agent, text="hello")
        assert wake_counter() == before  # nothing before the commit
    assert counted(callbacks) == 1
    callbacks[-1]()
    assert wake_counter() == before + 1


@pytest.mark.django_db
def test_the_agents_own_sandbox_send_in_the_gateway_wakes_no_one(agent):
    chat = sandbox_say(agent=agent, text="hello").chat
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks, wake_not_needed():
        sandbox_post(chat=chat, sender=sandbox_user_for_agent(agent=agent), text="hi yourself")
    assert counted(callbacks) == 0


@pytest.mark.django_db
def test_a_stored_plan_wakes_the_gateways_after_its_commit(agent, clock, fake_llm, settings):
    settings.CINDY_READ_DELAY_SECONDS = 0
    harness = Harness(clock)
    harness.start()
    fake_llm.set_default_reply(plan("hi there"))
    sandbox_say(agent=agent, text="hello")
    harness.ingest()
    harness.tick()
    assert harness.queued
    holder = AgentLease.objects.get(agent=agent).holder
    before, everyone = wake_counter(holder), wake_counter()
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        harness.work()
        assert TaskNode.objects.filter(kind="send", status=NodeStatus.PENDING).exists()
        assert wake_counter(holder) == before
    assert counted(callbacks) == 1
    callbacks[-1]()
    assert wake_counter(holder) == before + 1  # the gateway holding the agent wakes
    assert wake_counter() == everyone  # and no other


@pytest.mark.django_db
def test_a_replan_from_outside_the_gateway_wakes_it(agent, clock):
    conversation = Conversation.objects.create(agent=agent, peer_id=42, kind="dm")
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        graph_replan(conversation=conversation, trigger="nudge", target_message_id=None)
    assert counted(callbacks) == 1


@pytest.mark.django_db
def test_a_sign_in_code_wakes_the_gateways_after_its_commit(agent, clock, settings, staff_user):
    settings.CINDY_OTP_AGENT = agent.name
    device = TelegramDevice.objects.create(user=staff_user, name="Telegram", telegram_user_id=4242)
    before = wake_counter()
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        device.generate_challenge()
        assert wake_counter() == before
    assert GatewayRequest.objects.get().kind == GatewayRequest.Kind.SEND_OTP
    assert counted(callbacks) == 1
    callbacks[-1]()
    assert wake_counter() == before + 1


@pytest.mark.django_db
def test_an_operators_gateway_request_wakes_the_gateways(agent, clock):
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        conversation_request_leave(agent=agent, peer_id=-100123)
    assert GatewayRequest.objects.get().kind == GatewayRequest.Kind.LEAVE_CHAT
    assert counted(callbacks) == 1


# --- the wait ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_next_timer_is_the_earliest_future_node_a_flood_pause_or_a_reconnect(agent, clock, harness):
    harness.gateway.context.tick_seconds = 3600
    conversation = Conversation.objects.create(agent=agent, peer_id=42, kind="dm")
    assert async_to_sync(harness.gateway.idle.timer_seconds)() == float("inf")
    graph_replan(
        conversation=conversation,
        trigger="nudge",
        target_message_id=None,
        not_before=clock.now() + dt.timedelta(seconds=12),
    )
    assert node_next_due_at(agent_ids=[agent.pk], after=clock.now()) == clock.now() + dt.timedelta(seconds=12)
    assert async_to_sync(harness.gateway.idle.timer_seconds)() == pytest.approx(12)
    client = harness.gateway.clients[agent.pk]
    client.paused_until = clock.now() + dt.timedelta(seconds=7)
    assert async_to_sync(harness.gateway.idle.timer_seconds)() == pytest.approx(7)
    client.connected, client.retry_at = False, clock.monotonic() + 3
    assert async_to_sync(harness.gateway.idle.timer_seconds)() == pytest.approx(3)
    clock.advance(20)  # everything is past: nothing is due in the future any more
    assert async_to_sync(harness.gateway.idle.timer_seconds)() == float("inf")


@pytest.mark.django_db
def test_a_transports_update_ends_the_wait_at_once(agent, clock):
    class Receiving(SandboxTransport):
        on_update = None

    harness = Harness(clock, transport_factory=Receiving)
    harness.gateway.context.tick_seconds = 3600
    harness.start()
    transport = harness.gateway.clients[agent.pk].transport
    assert transport.on_update.func == harness.gateway.context.on_update

    async def scenario() -> str:
        waiting = asyncio.create_task(harness.gateway.idle.wait_for_work())
        await asyncio.sleep(0)
        transport.on_update()  # an update arrives while the gateway waits out its hour
        return await asyncio.wait_for(waiting, 30)  # a guard against a hang only

    assert async_to_sync(scenario)() == "turn"  # an update is a turn's work
    assert not harness.gateway.context.wakeup.is_set()  # consumed: the next wait waits again


MAX_PAUSES = 50


class ScriptedWait(IdleWait):
    """The idle wait of a `ScriptedGateway`: it records why each wait ended, and its pause plays the
    other processes' part, then the poll thread's (one read), and moves the FakeClock by the time
    asked unless woken."""

    def __init__(self, gateway: ScriptedGateway) -> None:
        super().__init__(gateway.context)
        self.gateway = gateway

    async def wait_for_work(self, **kwargs) -> str:
        reason = await super().wait_for_work(**kwargs)
        self.gateway.woke.append(reason)
        return reason

    async def pause(self, seconds: float) -> None:
        gateway = self.gateway
        gateway.pauses.append(seconds)
        loop = asyncio.get_running_loop()
        # Another process's writes: another thread, a fresh context (not the gateway's).
        await loop.run_in_executor(None, contextvars.Context().run, gateway.during_pause)
        await loop.run_in_executor(None, self.context.wake.poll)  # what the poll thread does meanwhile
        await asyncio.sleep(0)  # the event is set through the loop, as from the poll thread
        if not self.context.wakeup.is_set():
            gateway.clock.advance(seconds)
        if len(gateway.pauses) > MAX_PAUSES:  # the scenario went wrong: stop, and let its asserts say how
            gateway.request_stop()


class ScriptedGateway(Gateway):
    """Runs for real on a wake row read without its thread, waiting through a `ScriptedWait`."""

    def __init__(self, *, clock: FakeClock, during_pause, **kwargs) -> None:
        super().__init__(tick_seconds=3600, isolated_heartbeat=False, **kwargs)
        # As wake_listener builds it.
        self.context.wake = DbWake(threaded=False, gateway_id=self.gateway_id)
        self.idle = ScriptedWait(self)
        self.clock = clock
        self.during_pause = during_pause
        self.pauses: list[float] = []
        self.woke: list[str] = []
        self.passes: list[str] = []  # "full" or "follow-up", in order

    async def run_once(self, *, follow_up: bool = False) -> bool:
        self.passes.append("follow-up" if follow_up else "full")
        return await super().run_once(follow_up=follow_up)


@pytest.mark.django_db(transaction=True)
def test_the_gateway_wakes_on_a_bumped_signal_not_at_its_tick(agent, clock, settings):
    """A person writes in the sandbox while the gateway idles with a one-hour tick: the wake row moves,
    the wait ends, and the pass after it ingests the message and queues planning."""
    settings.CINDY_READ_DELAY_SECONDS = 0
    started = clock.now()
    queued: list[int] = []
    said: list[int] = []

    def during_pause() -> None:
        if not said:
            said.append(sandbox_say(agent=agent, text="are you there?").message_id)
        elif queued:
            gateway.request_stop()

    gateway = ScriptedGateway(
        clock=clock, during_pause=during_pause, enqueue=lambda node_id, owner: queued.append(node_id)
    )
    asyncio.run(gateway.run())

    assert gateway.woke[:2] == ["turn", "stopping"]  # a person's message: a turn's work
    assert gateway.passes[:2] == ["full", "follow-up"]  # the start's full pass, then the turn's
    assert gateway.pauses[0] == 3600  # it would have slept the whole tick without the wake-up
    assert clock.now() == started  # but it woke at once
    assert Message.objects.filter(text="are you there?").exists()
    assert TaskNode.objects.get(pk=queued[0]).kind == "received"


@pytest.mark.django_db(transaction=True)
def test_a_pass_that_only_handed_a_turn_to_the_workers_is_followed_by_the_wait_not_another_pass(
    agent, clock, settings
):
    """The turn's pass ingests the message and queues its planning: nothing is left for a pass right
    after it (the worker's plan wakes the gateway when stored), so the gateway waits at once."""
    settings.CINDY_READ_DELAY_SECONDS = 0
    queued: list[int] = []
    passes_at_pause: list[int] = []

    def during_pause() -> None:
        passes_at_pause.append(len(gateway.passes))
        if len(passes_at_pause) == 1:
            sandbox_say(agent=agent, text="still up?")
        else:
            gateway.request_stop()

    gateway = ScriptedGateway(
        clock=clock, during_pause=during_pause, enqueue=lambda node_id, owner: queued.append(node_id)
    )
    asyncio.run(gateway.run())

    assert len(queued) == 1 and TaskNode.objects.get(pk=queued[0]).kind == "received"
    # Between the wait the message ended and the next one: the turn's pass alone.
    assert passes_at_pause[1] - passes_at_pause[0] == 1
    assert gateway.passes[passes_at_pause[0]] == "follow-up"
    assert gateway.settled


@pytest.mark.django_db(transaction=True)
def test_a_node_that_fell_due_after_the_tick_looked_ends_the_wait_at_once(agent, clock):
    """The tick reads the due nodes early in its pass; a node whose read delay ended while the pass
    went on (the dispatch's Telegram calls) was neither claimed nor is it after the wait's own
    reading. The wait counts from the tick's reading, so it does not sleep until the idle pass."""
    harness = Harness(clock)
    harness.start()
    gateway = harness.gateway
    gateway.context.wake = DbWake(threaded=False, gateway_id=gateway.gateway_id)
    conversation = Conversation.objects.create(agent=agent, peer_id=42, kind="dm")
    looked = clock.now()
    graph_replan(
        conversation=conversation,
        trigger="nudge",
        target_message_id=None,
        not_before=looked + dt.timedelta(seconds=1),
    )
    clock.advance(2)  # the rest of the pass
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    gateway.idle.pause = pause
    # As after any pass but a settled one: the wait's own reading only.
    assert async_to_sync(gateway.idle.wait_for_work)() == "timer"
    assert pauses == [gateway.idle.full_pass_seconds()]  # it would sleep until the idle pass
    pauses.clear()
    assert async_to_sync(gateway.idle.wait_for_work)(due_since=looked) == "timer"
    assert pauses == []  # due already: no sleep


@pytest.mark.django_db(transaction=True)
def test_the_gateway_wakes_when_a_nodes_read_delay_ends_not_at_its_tick(agent, clock, settings):
    conversation = Conversation.objects.create(agent=agent, peer_id=42, kind="dm")
    due = clock.now() + dt.timedelta(seconds=12)
    graph_replan(conversation=conversation, trigger="nudge", target_message_id=None, not_before=due)
    queued: list[int] = []

    def during_pause() -> None:
        if queued:
            gateway.request_stop()

    gateway = ScriptedGateway(
        clock=clock, during_pause=during_pause, enqueue=lambda node_id, owner: queued.append(node_id)
    )
    asyncio.run(gateway.run())

    assert gateway.woke[0] == "timer"
    assert gateway.pauses[0] == pytest.approx(12)  # until the node is due, not the hour's tick
    assert len(queued) == 1 and TaskNode.objects.get(pk=queued[0]).not_before == due


@pytest.mark.django_db(transaction=True)
def test_with_wake_ups_off_the_gateway_waits_for_its_tick(agent, settings):
    settings.CINDY_WAKE = False
    gateway = Gateway(tick_seconds=3600, isolated_heartbeat=False)
    assert gateway.context.wake is None

    async def scenario() -> str:
        gateway.context.clients.clear()
        waiting = asyncio.create_task(gateway.idle.wait_for_work())
        await asyncio.sleep(0)
        await sync_to_async(wake_gateways)()  # sends nothing with wake-ups off
        gateway.context.on_update()  # and a transport's update does not end this wait either
        assert not waiting.done()
        gateway.request_stop()
        return await waiting

    assert asyncio.run(scenario()) == "stopping"


def _first_pause(gateway: ScriptedGateway) -> float:
    def during_pause() -> None:
        gateway.request_stop()

    gateway.during_pause = during_pause
    asyncio.run(gateway.run())
    return gateway.pauses[0]


@pytest.mark.django_db(transaction=True)
def test_an_idle_gateway_with_wake_ups_sleeps_its_idle_pass_not_its_tick(agent, clock, settings):
    """Nothing due and nothing announced: with wake-ups working, the next pass comes after the idle pass
    (longer than the tick); the tick still bounds it when it is the longer of the two."""
    settings.CINDY_IDLE_PASS_SECONDS = 5
    gateway = ScriptedGateway(clock=clock, during_pause=None, enqueue=lambda node_id, owner: None)
    gateway.context.tick_seconds = 1
    assert _first_pause(gateway) == 5

    settings.CINDY_IDLE_PASS_SECONDS = 0.5
    gateway = ScriptedGateway(clock=clock, during_pause=None, enqueue=lambda node_id, owner: None)
    gateway.context.tick_seconds = 1
    assert _first_pause(gateway) == 1


@pytest.mark.django_db(transaction=True)
def test_while_wake_ups_cannot_arrive_the_gateway_passes_every_tick(agent, clock, settings):
    settings.CINDY_IDLE_PASS_SECONDS = 5
    gateway = ScriptedGateway(clock=clock, during_pause=None, enqueue=lambda node_id, owner: None)
    gateway.context.tick_seconds = 1
    gateway.context.wake.failing = True  # what the poll thread records when its read fails
    assert not gateway.context.wake.healthy()
    assert _first_pause(gateway) == 1


@pytest.mark.django_db(transaction=True)
def test_a_turn_wake_up_runs_the_turns_steps_and_the_full_pass_still_comes_each_idle_pass(
    agent, clock, settings
):
    """Woken for a turn, the gateway runs the turn's steps only; the next full pass still comes one
    idle pass after the last, however many turn wake-ups come meanwhile, and a full wake-up (an
    operator's request) gets a full pass at once."""
    settings.CINDY_IDLE_PASS_SECONDS = 5
    settings.CINDY_READ_DELAY_SECONDS = 0
    steps: list[list[str]] = []
    script = iter(
        [
            lambda: (clock.advance(3), sandbox_say(agent=agent, text="one")),  # a turn wake-up, 3 s on
            lambda: None,  # nothing: the wait ends when the full pass is due
            lambda: sandbox_say(agent=agent, text="two"),
            lambda: conversation_request_leave(agent=agent, peer_id=-100123),  # a full wake-up
        ]
    )

    def during_pause() -> None:
        action = next(script, None)
        if action is None:
            gateway.request_stop()
        else:
            action()

    gateway = ScriptedGateway(clock=clock, during_pause=during_pause, enqueue=lambda node_id, owner: None)
    gateway.context.tick_seconds = 1
    original = gateway.run_once

    async def run_once(*, follow_up: bool = False) -> bool:
        chosen = gateway.follow_up_steps() if follow_up else gateway.all_steps()
        steps.append([step.name for step in chosen])
        return await original(follow_up=follow_up)

    gateway.run_once = run_once
    asyncio.run(gateway.run())

    assert gateway.woke[:4] == ["turn", "timer", "turn", "wakeup"]
    assert gateway.pauses[0] == 5  # the idle pass
    assert gateway.pauses[1] == pytest.approx(2)  # after the turn pass: until the full pass is due
    first_turn = gateway.passes.index("follow-up")
    assert "requests" not in steps[first_turn] and "ingest" in steps[first_turn]
    assert Message.objects.filter(text__in=["one", "two"]).count() == 2
    # The full pass came when due, and at once for the operator's request.
    assert gateway.passes.count("full") >= 3
    assert GatewayRequest.objects.get().status != GatewayRequest.Status.PENDING
