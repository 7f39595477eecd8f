"""Placement of `runagents --auto` gateways, inside one process on an injected clock: shares, the
catch-up of a joining gateway, draining, takeover of expired leases, and per-gateway wake-ups."""

from __future__ import annotations

import random

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase

from agents.models import Agent, AgentLease
from conversations.models import GatewayWake
from conversations.services.wake import wake_counter, wake_counters, wake_gateways
from engine.health import process_beat
from engine.models import ProcessHeartbeat
from engine.placement import CLAIM_BATCH, fleet_shares, placement_plan, placement_register
from engine.tests.harness import Harness
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def make_agents(count: int) -> list[Agent]:
    return [
        Agent.objects.create(
            name=f"Agent{n:03d}", phone=f"+1555{n:04d}", instructions="x", transport="sandbox", llm="gemini"
        )
        for n in range(count)
    ]


def auto(clock, name: str, capacity: int = 100) -> Harness:
    harness = Harness(clock, gateway_id=name, capacity=capacity)
    placement_register(gateway_id=name, capacity=capacity)
    return harness


def settle(*harnesses: Harness, passes: int = 20) -> None:
    for _ in range(passes):
        if not any([h.step("leases") for h in harnesses]):
            return
    raise AssertionError("the gateways kept moving agents")


def held(harness: Harness) -> int:
    return len(harness.gateway.clients)


def test_shares_are_even_and_respect_capacities():
    assert fleet_shares([("a", 100), ("b", 100), ("c", 100)], 300) == {"a": 100, "b": 100, "c": 100}
    assert fleet_shares([("a", 100), ("b", 100)], 7) == {"a": 4, "b": 3}
    assert fleet_shares([("a", 10), ("b", 100)], 60) == {"a": 10, "b": 50}  # the small one is full
    assert fleet_shares([("a", 10), ("b", 20)], 60) == {"a": 10, "b": 20}  # 30 stay unplaced
    assert fleet_shares([], 5) == {}
    assert sum(fleet_shares([("a", 50), ("b", 70), ("c", 9)], 101).values()) == 101


def test_a_gateway_takes_its_capacity_in_batches(clock):
    make_agents(CLAIM_BATCH + 30)
    gateway = auto(clock, "gw-a", capacity=CLAIM_BATCH + 20)
    assert gateway.step("leases")
    assert held(gateway) == CLAIM_BATCH  # a batch per pass
    settle(gateway)
    assert held(gateway) == CLAIM_BATCH + 20  # never more than its capacity
    assert AgentLease.objects.filter(holder="gw-a").count() == CLAIM_BATCH + 20


def test_a_joining_gateway_gets_an_even_share_handed_over(clock):
    make_agents(30)
    first = auto(clock, "gw-a")
    settle(first)
    assert held(first) == 30
    second = auto(clock, "gw-b")
    settle(first, second)
    assert (held(first), held(second)) == (15, 15)
    assert AgentLease.objects.filter(holder="gw-b").count() == 15
    assert set(first.gateway.clients).isdisjoint(second.gateway.clients)
    third = auto(clock, "gw-c")
    settle(first, second, third)
    assert sorted([held(first), held(second), held(third)]) == [10, 10, 10]
    assert AgentLease.objects.count() == 30


def test_a_drained_gateway_hands_everything_back_at_once_and_takes_nothing(clock):
    make_agents(60)
    first, second = auto(clock, "gw-a"), auto(clock, "gw-b")
    settle(first, second)
    assert (held(first), held(second)) == (30, 30)
    call_command("drain", "gw-a")
    assert first.step("leases")
    assert held(first) == 0  # all 30 in one pass, not a batch of them
    assert first.gateway.context.draining
    settle(first, second)
    assert (held(first), held(second)) == (0, 60)
    call_command("drain", "gw-a", "--undo")
    settle(first, second)
    assert (held(first), held(second)) == (30, 30)


def test_drain_names_the_gateways_it_knows(clock):
    auto(clock, "gw-a")
    with pytest.raises(CommandError, match=r"no gateway 'gw-x' is registered; running gateways: gw-a"):
        call_command("drain", "gw-x")


def test_a_dead_gateways_agents_are_taken_once_its_leases_and_row_expire(clock, settings):
    settings.CINDY_LEASE_SECONDS = 30
    make_agents(20)
    first, second = auto(clock, "gw-a"), auto(clock, "gw-b")
    settle(first, second)
    assert held(second) == 10
    clock.advance(20)  # gw-a stops renewing (killed); gw-b renews its own leases and row
    second.step("heartbeat")
    placement_register(gateway_id="gw-b", capacity=100)
    assert not second.step("leases")  # gw-a's leases are live: nothing to take yet
    clock.advance(11)
    second.step("heartbeat")
    placement_register(gateway_id="gw-b", capacity=100)
    settle(second)
    assert held(second) == 20
    assert AgentLease.objects.filter(holder="gw-a").count() == 0


def test_a_plan_takes_only_free_agents_and_hands_back_idle_ones_first(clock):
    agents = make_agents(6)
    ids = [a.pk for a in agents]
    placement_register(gateway_id="gw-a", capacity=2)
    AgentLease.objects.create(
        agent=agents[0],
        holder="gw-other",
        acquired_at=clock.now(),
        heartbeat_at=clock.now(),
        expires_at=clock.now().replace(year=2100),
    )
    plan = placement_plan(gateway_id="gw-a", capacity=2, wanted=ids, held=[], rng=random.Random(1))
    assert plan.share == 2 and ids[0] not in plan.take and len(plan.take) == 4
    plan = placement_plan(gateway_id="gw-a", capacity=2, wanted=ids, held=ids[1:5])
    assert plan.hand_back == [ids[4], ids[3]]  # the surplus, newest first


def _held_by_gw_a(agent: Agent, clock) -> None:
    AgentLease.objects.create(
        agent=agent,
        holder="gw-a",
        acquired_at=clock.now(),
        heartbeat_at=clock.now(),
        expires_at=clock.now().replace(year=2100),
    )


def test_a_wake_up_for_an_agent_reaches_its_holder_only(clock):
    wendy, other = make_agents(2)
    _held_by_gw_a(wendy, clock)
    before = (wake_counter(), wake_counter("gw-a"), wake_counter("gw-b"))
    wake_gateways([wendy.pk])
    assert (wake_counter(), wake_counter("gw-a"), wake_counter("gw-b")) == (
        before[0],
        before[1] + 1,
        before[2],
    )
    wake_gateways([other.pk])  # nobody holds it: every gateway wakes, so that one takes it
    assert wake_counter() == before[0] + 1
    assert wake_counter("gw-b") == before[2] + 1  # gw-b reads the installation's row too
    assert GatewayWake.objects.filter(gateway="gw-b").count() == 0


def test_a_sandbox_message_wakes_the_holder_of_the_agent_it_is_for(clock):
    (wendy,) = make_agents(1)
    gateway = auto(clock, "gw-a")
    settle(gateway)
    with TestCase.captureOnCommitCallbacks(execute=True):
        sandbox_say(agent=wendy, text="hello")
    row = GatewayWake.objects.get(gateway="gw-a")
    assert (row.counter, row.turns) == (0, 1)  # for a turn: ingesting it needs no full pass


def test_a_turn_wake_up_for_an_agent_nobody_holds_is_a_full_one_to_every_gateway(clock):
    """Taking an agent is a full pass's work (its leases step): the wake-up to every gateway that
    stands for an agent without a holder asks for one, whatever the writer's kind."""
    wendy, other = make_agents(2)
    _held_by_gw_a(wendy, clock)
    before = (wake_counters(), wake_counters("gw-a"))
    wake_gateways([wendy.pk, other.pk], turn=True)
    full, turns = wake_counters()
    assert (full, turns) == (before[0][0] + 1, before[0][1])  # everyone: a full pass
    full, turns = wake_counters("gw-a")
    assert (full, turns) == (before[1][0] + 1, before[1][1] + 1)  # the holder: its turn, and that


def test_runagents_refuses_names_with_auto_and_capacity_without_it():
    with pytest.raises(CommandError, match="--auto takes no agent names"):
        call_command("runagents", "Wendy", "--auto")
    with pytest.raises(CommandError, match="--capacity is for --auto gateways"):
        call_command("runagents", "--capacity", "5")
    with pytest.raises(CommandError, match="--capacity 0: give at least 1"):
        call_command("runagents", "--auto", "--capacity", "0")


def test_a_gateway_stopping_marks_itself_draining_and_wakes_the_others(clock):
    make_agents(4)
    first = auto(clock, "gw-a")
    settle(first)
    async_to_sync(first.gateway.drain)()
    assert AgentLease.objects.count() == 0
    assert wake_counter() >= 1  # the others were woken to take the agents


def test_health_lists_an_auto_gateways_capacity_and_drain(clock, capsys):
    gateway = auto(clock, "gw-a", capacity=40)
    make_agents(3)
    settle(gateway)
    placement_register(gateway_id="gw-a", capacity=40)
    with pytest.raises(SystemExit):  # unhealthy: no worker pool runs
        call_command("health")
    assert "gw-a: pid" in capsys.readouterr().out
    call_command("drain", "gw-a")
    assert "gw-a is draining; it holds 3 agent(s) still" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        call_command("health")
    assert "of capacity 40, draining" in capsys.readouterr().out


def test_drain_refuses_a_gateway_without_auto(clock):
    process_beat(name="gw-named", kind=ProcessHeartbeat.Kind.GATEWAY)
    with pytest.raises(CommandError, match="gw-named was not started with --auto"):
        call_command("drain", "gw-named")
    assert ProcessHeartbeat.objects.get(name="gw-named").drain_requested_at is None
