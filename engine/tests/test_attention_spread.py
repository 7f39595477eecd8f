"""The unread scans of 1,000 agents (engine/attention.py): each keeps its own phase through passes that
come only every few seconds, and no more than CINDY_UPKEEP_CONCURRENCY talk to Telegram at once."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync

from agents.models import Agent
from engine.attention import next_scan_due
from engine.clients import AgentClient
from engine.gateway import Gateway

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


@pytest.mark.django_db
def test_a_thousand_agents_scans_keep_their_phases_and_a_few_run_at_once(clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = INTERVAL
    settings.CINDY_UPKEEP_CONCURRENCY = CAP
    gateway = Gateway(gateway_id="gw-scans", enqueue=lambda node_id, owner: None, tick_seconds=0)
    for agent_id in range(1, AGENTS + 1):
        agent = Agent(pk=agent_id, name=f"Scan{agent_id:04d}", transport="sandbox")
        gateway.clients[agent_id] = AgentClient(agent=agent, transport=_Telegram(), connected=True)
    step = gateway.steps["attention"]
    started: list[int] = []

    async def run() -> None:
        for _ in range(int(3 * INTERVAL / PASS_SECONDS)):  # three intervals, a pass every 5 s
            before = sum(c.transport.calls for c in gateway.clients.values())
            await step.run()
            await asyncio.gather(*(s.task for s in step.scans.values() if s.task is not None))
            started.append(sum(c.transport.calls for c in gateway.clients.values()) - before)
            clock.advance(PASS_SECONDS)
        await step.stop()

    async_to_sync(run)()

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
