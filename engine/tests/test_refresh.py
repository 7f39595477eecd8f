"""Per-agent refreshes beside the pass (engine/refresh.py): 1,000 accounts with a slow Telegram never
stall a pass, each agent keeps its own phase, the cap holds and a flood wait moves only its account.
The dialog refresh runs with unread scans off (with them on, the scans read the lists)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync

from agents.models import Agent
from conversations.transport.base import FloodWait
from engine.clients import AgentClient
from engine.gateway import Gateway
from engine.refresh import Refreshes, dialog_read_period, refresh_offset
from engine.upkeep import DIALOG_REFRESH_SECONDS
from sandbox.transport.transport import SandboxTransport

ROUND_TRIP = 0.1  # seconds: Telegram far away
AGENTS = 1000


class SlowTelegram:
    """The sandbox transport with a round trip added to each call the refreshes make."""

    def __init__(self, inner: SandboxTransport, *, flood: int = 0) -> None:
        self.inner = inner
        self.flood = flood
        self.calls = 0
        #: Set by a test: every call waits for it (Telegram answers nothing until then).
        self.answer: asyncio.Event | None = None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def dialogs(self, *, limit: int = 100):
        if self.answer is not None:
            await self.answer.wait()
        else:
            await asyncio.sleep(ROUND_TRIP)
        self.calls += 1
        if self.flood:
            raise FloodWait(self.flood)
        return await self.inner.dialogs(limit=limit)


@pytest.fixture(autouse=True)
def _scans_off(settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = 0


def _gateway(count: int) -> Gateway:
    Agent.objects.bulk_create(
        Agent(name=f"Slow{i:04d}", phone=f"+1555{i:07d}", transport="sandbox") for i in range(count)
    )
    gateway = Gateway(gateway_id="gw-refresh", enqueue=lambda node_id, owner: None, tick_seconds=0)
    for agent in Agent.objects.order_by("pk"):
        inner = SandboxTransport(agent)
        async_to_sync(inner.connect)()
        slow = SlowTelegram(inner)
        gateway.clients[agent.pk] = AgentClient(agent=agent, transport=slow, connected=True)
    return gateway


@pytest.mark.django_db
def test_a_thousand_slow_accounts_never_hold_up_a_pass(clock, settings):
    """At 10 lists a second, 1,000 agents' refresh period stretches from 60 to 100 s: each account is
    asked once in it, about ten a second, and the passes never wait for Telegram."""
    settings.CINDY_UPKEEP_CONCURRENCY = 100
    settings.CINDY_DIALOG_READS_PER_SECOND = 10
    period = AGENTS / 10
    assert dialog_read_period(DIALOG_REFRESH_SECONDS, AGENTS) == period
    gateway = _gateway(AGENTS)
    refreshes = gateway.steps["dialogs"].refreshes
    started: list[int] = []

    async def run() -> None:
        # Telegram answers no call until every pass of the period has run: a pass that waited on one
        # would never return (the bound turns that into a failure instead of a hang).
        answer = asyncio.Event()
        for client in gateway.clients.values():
            client.transport.answer = answer
        for _ in range(int(period) + 1):  # one period, a pass per second
            before = len(refreshes.tasks())
            await asyncio.wait_for(gateway.steps["dialogs"].run(), timeout=60)
            started.append(len(refreshes.tasks()) - before)
            await asyncio.sleep(0)
            clock.advance(1)
        assert all(c.transport.calls == 0 for c in gateway.clients.values())  # none answered yet
        answer.set()
        await gateway.steps["dialogs"].settle()

    async_to_sync(run)()

    calls = [c.transport.calls for c in gateway.clients.values()]
    assert calls == [1] * AGENTS  # every account once in its period
    # Spread over the period: about ten a second, never everyone on the same beat.
    assert max(started) <= 3 * AGENTS / period
    assert refreshes.cap.most_running <= 100


@pytest.mark.django_db
def test_each_agent_keeps_its_own_phase_and_a_flood_wait_moves_only_its_account(clock):
    gateway = _gateway(3)
    first, flooded, third = sorted(gateway.clients)
    gateway.clients[flooded].transport.flood = 30
    refreshes = gateway.steps["dialogs"].refreshes

    async def step_and_settle() -> None:
        await gateway.steps["dialogs"].run()
        await gateway.steps["dialogs"].settle()

    async_to_sync(step_and_settle)()
    dues = {agent_id: state.due for agent_id, state in refreshes.states.items()}
    offsets = {a: refresh_offset(a, DIALOG_REFRESH_SECONDS) for a in dues}
    assert len(set(offsets.values())) == 3  # three phases
    assert all(0 < dues[a] - clock.monotonic() <= DIALOG_REFRESH_SECONDS for a in dues)

    clock.advance(DIALOG_REFRESH_SECONDS)  # every agent's beat has come
    async_to_sync(step_and_settle)()
    now = clock.monotonic()
    assert gateway.clients[first].transport.calls == 1
    assert gateway.clients[flooded].transport.calls == 1
    assert refreshes.states[flooded].due >= now + 30  # after Telegram's wait
    assert refreshes.states[first].due - now == pytest.approx(
        (offsets[first] - now) % DIALOG_REFRESH_SECONDS or DIALOG_REFRESH_SECONDS
    )


def test_a_step_a_hair_before_its_beat_runs_it_and_schedules_the_next_a_period_on(clock):
    """The monotonic clock is a float sum: advancing to a beat can land a rounding error short of
    it. That step runs the refresh, and the next refresh is one period on, not the same beat again."""
    runs: list[float] = []

    async def job(agent_id: int, client: AgentClient) -> bool:
        runs.append(clock.monotonic())
        return False

    refreshes = Refreshes("dialog", period=DIALOG_REFRESH_SECONDS, at_connect=False, job=job)
    agent_id = 851  # its beat, 1024.14 s, is a sum the clock's steps miss by a rounding error
    client = AgentClient(agent=Agent(pk=agent_id, name="Nine"), transport=None, connected=True)

    async def step() -> None:
        refreshes.step({agent_id: client})
        await refreshes.settle()

    async_to_sync(step)()
    beat = refreshes.states[agent_id].due
    clock.advance(beat - clock.monotonic() - 1)
    clock.advance(1)
    assert clock.monotonic() != beat and clock.monotonic() == pytest.approx(beat)
    async_to_sync(step)()

    assert runs == [clock.monotonic()]
    assert refreshes.states[agent_id].due == pytest.approx(beat + DIALOG_REFRESH_SECONDS)
