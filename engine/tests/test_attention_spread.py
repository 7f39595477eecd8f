"""The unread scans of 1,000 agents (engine/attention.py): each keeps its own phase through passes that
come only every few seconds, no more than CINDY_UPKEEP_CONCURRENCY talk to Telegram at once, and the
gateway starts about CINDY_DIALOG_READS_PER_SECOND scans a second however many agents it holds."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync

from agents.models import Agent
from engine.attention import next_scan_due
from engine.clients import AgentClient
from engine.gateway import Gateway
from engine.refresh import dialog_read_period

AGENTS = 1000
INTERVAL = 30.0
PASS_SECONDS = 5.0  # an idle gateway's passes
CAP = 8


class _Telegram:
    """An account with no dialogs; counts the dialog lists being read at once across all accounts."""

    reading = 0
    most = 0

    def __init__(self) -> None:
        self.calls = 0

    async def dialogs(self, *, limit: int = 100):
        cls = type(self)
        cls.reading += 1
        cls.most = max(cls.most, cls.reading)
        for _ in range(3):  # Telegram's round trip: the other scans run meanwhile
            await asyncio.sleep(0)
        cls.reading -= 1
        self.calls += 1
        return []


def _gateway() -> Gateway:
    gateway = Gateway(gateway_id="gw-scans", enqueue=lambda node_id, owner: None, tick_seconds=0)
    for agent_id in range(1, AGENTS + 1):
        agent = Agent(pk=agent_id, name=f"Scan{agent_id:04d}", transport="sandbox")
        gateway.clients[agent_id] = AgentClient(agent=agent, transport=_Telegram(), connected=True)
    return gateway


def _passes(gateway: Gateway, clock, count: int) -> list[int]:
    """`count` passes of the attention step, one every PASS_SECONDS, each scan it started run to its
    end; how many scans each pass started."""
    step = gateway.steps["attention"]
    started: list[int] = []

    async def run() -> None:
        for _ in range(count):
            before = sum(c.transport.calls for c in gateway.clients.values())
            await step.run()
            await asyncio.gather(*(s.task for s in step.scans.values() if s.task is not None))
            started.append(sum(c.transport.calls for c in gateway.clients.values()) - before)
            clock.advance(PASS_SECONDS)
        await step.stop()

    async_to_sync(run)()
    return started


@pytest.mark.django_db
def test_a_thousand_agents_scans_keep_their_phases_and_a_few_run_at_once(clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = INTERVAL
    settings.CINDY_DIALOG_READS_PER_SECOND = 0  # the interval as set, however many agents
    settings.CINDY_UPKEEP_CONCURRENCY = CAP
    _Telegram.most = 0
    gateway = _gateway()
    step = gateway.steps["attention"]

    started = _passes(gateway, clock, int(3 * INTERVAL / PASS_SECONDS))  # three intervals

    calls = [c.transport.calls for c in gateway.clients.values()]
    assert min(calls) >= 3 and max(calls) <= 4  # one scan per agent and interval, and the first
    assert _Telegram.most <= CAP  # the rest waited their turn
    assert step.cap.most_running <= CAP
    # Each agent's next scan is on its own phase, not on the beat of the pass that started its last
    # one (scheduled as "that pass + the interval", they all fell on the passes' six beats).
    phases = {round(state.due % INTERVAL, 3) for state in step.scans.values()}
    assert len(phases) >= AGENTS * 0.9
    # So after the first scans, each pass starts about the agents whose beats fell since the last.
    assert max(started[2:]) <= 2 * AGENTS * PASS_SECONDS / INTERVAL


def test_the_next_scan_is_on_the_agent_s_beat_at_least_half_an_interval_on():
    for agent_id in (1, 17, 851):
        for clock in (0.0, 12.5, 29.999, 1000.25):
            due = next_scan_due(agent_id, clock, INTERVAL)
            assert INTERVAL / 2 <= due - clock <= 1.5 * INTERVAL
            assert next_scan_due(agent_id, due - 0.001, INTERVAL) - due == pytest.approx(INTERVAL)
            assert (due - next_scan_due(agent_id, 0.0, INTERVAL)) % INTERVAL == pytest.approx(
                0, abs=1e-6
            ) or (due - next_scan_due(agent_id, 0.0, INTERVAL)) % INTERVAL == pytest.approx(
                INTERVAL, abs=1e-6
            )


@pytest.mark.django_db
def test_a_thousand_agents_scan_at_the_gateway_s_rate_not_each_every_interval(clock, settings):
    """At 5 lists a second, 1,000 agents scan every 200 s, not every 30: about 25 scans a pass of
    5 s, each agent once an interval (and once at connect), on phases of their own."""
    settings.CINDY_UNREAD_SCAN_SECONDS = INTERVAL
    settings.CINDY_DIALOG_READS_PER_SECOND = 5
    settings.CINDY_UPKEEP_CONCURRENCY = CAP
    stretched = dialog_read_period(INTERVAL, AGENTS)
    assert stretched == AGENTS / 5
    gateway = _gateway()

    started = _passes(gateway, clock, int(2 * stretched / PASS_SECONDS))  # two intervals

    calls = [c.transport.calls for c in gateway.clients.values()]
    assert min(calls) >= 2 and max(calls) <= 3  # at connect, then once an interval
    assert sum(calls) <= AGENTS + 2 * AGENTS  # not one every 30 s: that is 14 each
    # After the connect's spread (5 s), each pass starts about rate × pass seconds, never the fleet.
    assert max(started[2:]) <= 2 * 5 * PASS_SECONDS
    phases = {round(state.due % stretched, 3) for state in gateway.steps["attention"].scans.values()}
    assert len(phases) >= AGENTS * 0.9


def test_a_small_gateway_scans_at_the_interval_as_set(settings):
    settings.CINDY_DIALOG_READS_PER_SECOND = 5
    assert dialog_read_period(INTERVAL, 100) == INTERVAL  # 100 agents: 3.3 lists a second
    assert dialog_read_period(INTERVAL, 150) == INTERVAL
    assert dialog_read_period(INTERVAL, 300) == 60.0
    assert dialog_read_period(0.0, 1000) == 0.0  # scans off stay off
    settings.CINDY_DIALOG_READS_PER_SECOND = 0
    assert dialog_read_period(INTERVAL, 1000) == INTERVAL
