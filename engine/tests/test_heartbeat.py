"""The lease heartbeat runs beside the steps and fences the gateway before its leases can expire."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError

from agents.models import AgentLease
from cindy_site.clock import FakeClock
from conversations.models import ActivityEvent
from engine.gateway import Gateway
from engine.tests.harness import Harness
from sandbox.transport.transport import SandboxTransport

#: Bounds a step that waits for the heartbeat, so a broken heartbeat fails the test instead of hanging it.
GUARD_SECONDS = 15


class CountingSandbox(SandboxTransport):
    disconnects = 0

    async def disconnect(self) -> None:
        CountingSandbox.disconnects += 1
        await super().disconnect()


@pytest.fixture
def counted(agent, clock, settings):
    settings.CINDY_LEASE_SECONDS = 30
    CountingSandbox.disconnects = 0
    harness = Harness(
        clock, transport_factory=lambda a, gateway_id="": CountingSandbox(a, gateway_id=gateway_id)
    )
    harness.start()
    return harness


def _database_gone(**kwargs):
    raise OperationalError("Lost connection to server during query")


@pytest.fixture
def renewals_fail(monkeypatch):
    """The database is away for the heartbeat's renewals; `monkeypatch.undo()` brings it back."""
    monkeypatch.setattr("engine.heartbeat.lease_heartbeat", _database_gone)


@pytest.mark.django_db
def test_a_gateway_that_cannot_renew_its_leases_disconnects_before_they_can_expire(
    agent, counted, clock, monkeypatch, renewals_fail
):
    for seconds in (10, 10, 4.9):  # two renewals fail; 24.9 s after the last one it still holds on
        clock.advance(seconds)
        counted.step("heartbeat")
        assert list(counted.gateway.clients) == [agent.pk]
    assert CountingSandbox.disconnects == 0

    clock.advance(0.1)  # 25 s: 5 s before the lease may be taken by another gateway
    assert counted.step("heartbeat") is True
    assert counted.gateway.clients == {}
    assert CountingSandbox.disconnects == 1
    lease = AgentLease.objects.get()
    assert lease.expires_at > clock.now()  # fenced while the lease was still ours
    assert ActivityEvent.objects.filter(kind="agent_offline", summary="lease not renewed in time").exists()

    monkeypatch.undo()  # the database answers again: the agent is taken again and reconnected
    counted.start()
    assert counted.gateway.clients[agent.pk].connected


@pytest.mark.django_db
def test_a_renewal_keeps_the_client_and_restarts_the_fence_countdown(agent, counted, clock):
    for _ in range(6):  # a minute of renewals every 10 s
        clock.advance(10)
        counted.step("heartbeat")
    assert list(counted.gateway.clients) == [agent.pk]
    assert CountingSandbox.disconnects == 0
    assert (AgentLease.objects.get().expires_at - clock.now()).total_seconds() == 30


@pytest.mark.django_db
def test_a_client_connected_while_it_was_fenced_is_disconnected_again(agent, counted, clock, monkeypatch):
    client = counted.gateway.clients[agent.pk]
    client.connected, client.failures = False, 1  # reconnecting when the fence struck
    counted.gateway.clients.pop(agent.pk)
    client.dropped = True
    counted.gateway.clients[agent.pk] = client  # a step still holds it, as in the race
    counted.step("connect")
    assert not client.connected
    assert CountingSandbox.disconnects == 2  # before connecting, and the connection it made


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_a_step_is_stuck_on_the_database_thread(agent, settings):
    """A step blocking the ORM thread the steps share (a long SQLite busy wait) for two lease
    lifetimes: the heartbeat renews on its own connection all along, and the agent stays held."""
    settings.CINDY_LEASE_SECONDS = 30
    clock = FakeClock()
    release = threading.Event()
    seen: dict = {}

    from cindy_site.clock import set_clock

    def lease_left() -> float:
        lease = AgentLease.objects.filter(agent_id=agent.pk).first()
        return (lease.expires_at - clock.now()).total_seconds() if lease else -1.0

    previous = set_clock(clock)
    try:
        gateway = Gateway(gateway_id="gw-stuck", tick_seconds=0)
        stuck = asyncio.Event()

        async def stuck_tick() -> bool:
            if not gateway.clients:
                # The agent is not taken yet: the first pass's lease step met the heartbeat's first
                # renewal, which runs at once on a connection of its own, and the test database (one
                # SQLite file in memory shared between connections) refuses a second writer at once
                # instead of waiting. The next pass takes the agent; only then does the step stick.
                return False
            stuck.set()
            await sync_to_async(release.wait)(GUARD_SECONDS)
            gateway.request_stop()
            return False

        async def heartbeat_pause(seconds: float) -> None:
            await stuck.wait()
            seen.setdefault("stuck_at", clock.monotonic())
            if clock.monotonic() - seen["stuck_at"] < 2 * settings.CINDY_LEASE_SECONDS:
                clock.advance(seconds)
                return
            seen["expires_in"] = await sync_to_async(lease_left, thread_sensitive=False)()
            seen["held"] = list(gateway.clients)
            release.set()
            await asyncio.Event().wait()  # until run() cancels the heartbeat

        gateway.steps["tick"].run = stuck_tick
        gateway.heartbeat.pause = heartbeat_pause
        asyncio.run(gateway.run())
    finally:
        set_clock(previous)
    assert seen.get("held") == [agent.pk], "the heartbeat did not run while the step was stuck"
    assert seen["expires_in"] > 20
    assert not AgentLease.objects.exists()  # the drain released it afterwards


@pytest.mark.django_db
def test_a_lease_taken_by_another_gateway_drops_the_agent_without_releasing_it_or_calling_it_offline(
    agent, counted, clock
):
    AgentLease.objects.update(holder="gw-b")  # taken over, e.g. after a clock jump on this host
    counted.step("heartbeat")
    clock.advance(10)
    counted.step("heartbeat")
    assert counted.gateway.clients == {}
    assert CountingSandbox.disconnects == 1
    assert AgentLease.objects.get().holder == "gw-b"
    # The agent is live on gw-b: this gateway must not call it offline.
    assert not ActivityEvent.objects.filter(kind="agent_offline").exists()


def test_the_task_workers_are_started_from_the_gateway_thread():
    """The child's parent-death signal follows the thread that started it: the loop's, not a pool's."""

    class RecordingWorkers:
        threads: list[threading.Thread] = []

        def step(self) -> bool:
            self.threads.append(threading.current_thread())
            return True

    workers = RecordingWorkers()
    assert asyncio.run(Gateway(gateway_id="gw", workers=workers).steps["workers"].run()) is True
    assert workers.threads == [threading.current_thread()]


@pytest.mark.django_db
def test_a_fenced_gateway_does_not_call_an_agent_offline_that_another_gateway_took(
    agent, counted, clock, renewals_fail
):
    AgentLease.objects.update(holder="gw-b")  # taken over while this gateway could not renew
    for seconds in (10, 10, 5):
        clock.advance(seconds)
        counted.step("heartbeat")
    assert counted.gateway.clients == {}
    assert CountingSandbox.disconnects == 1
    assert not ActivityEvent.objects.filter(kind="agent_offline").exists()
