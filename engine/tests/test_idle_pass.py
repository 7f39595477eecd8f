"""An idle gateway pass: a fixed number of queries whatever the number of agents, and admin edits still
reach the held clients at the next pass."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent
from engine.gateway import Gateway
from engine.responsiveness import agents_asleep
from engine.tests.cast import make_agent
from memory.models import ScheduleEntry


def _idle_pass_queries(count: int, clock) -> int:
    for i in range(count):
        make_agent(f"Idle{i}", phone=f"+1555000{i:04d}")
    gateway = Gateway(gateway_id=f"gw-idle-{count}", enqueue=lambda node_id, owner: None, tick_seconds=0)

    async def warm_up() -> None:
        for _ in range(3):  # leases, connections, first media scan
            await gateway.run_once()
        await gateway.steps["library"].settle()  # the first library refreshes, which run beside the passes

    async_to_sync(warm_up)()
    assert len(gateway.clients) == count and all(c.connected for c in gateway.clients.values())
    with CaptureQueriesContext(connection) as queries:
        assert async_to_sync(gateway.run_once)() is False
    Agent.objects.all().delete()
    return len(queries.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_an_idle_pass_costs_the_same_queries_for_two_agents_as_for_six(clock):
    assert _idle_pass_queries(2, clock) == _idle_pass_queries(6, clock)


@pytest.mark.django_db
def test_an_edit_reaches_the_held_client_at_the_next_pass_and_unchanged_agents_are_not_rebuilt(
    agent, other_agent, harness, clock
):
    harness.step("leases")  # picks up the account ids the connections recorded
    heidi = harness.gateway.clients[other_agent.pk].agent
    # A queryset update, as the admin's actions and the gateway itself write (no `updated` bump).
    Agent.objects.filter(pk=agent.pk).update(daily_schedule="Asleep: 00:00-23:59", timezone="UTC")
    ScheduleEntry.objects.all().delete()

    harness.step("leases")

    wendy = harness.gateway.clients[agent.pk].agent
    assert (wendy.daily_schedule, wendy.timezone) == ("Asleep: 00:00-23:59", "UTC")
    assert harness.gateway.clients[other_agent.pk].agent is heidi
    held = [client.agent for client in harness.gateway.clients.values()]
    assert agents_asleep(agents=held, at=clock.now()) == {agent.pk}


def _agent_selects(queries) -> list[str]:
    return [
        q["sql"].replace("`", '"') for q in queries if 'FROM "agents_agent"' in q["sql"].replace("`", '"')
    ]


@pytest.mark.django_db
def test_between_full_reads_a_pass_reads_the_stamps_and_only_the_changed_rows(
    agent, other_agent, harness, clock
):
    """At most passes the lease step reads each wanted agent's id and `updated` stamp, then the whole
    row of an agent whose stamp changed; every FULL_READ_SECONDS every whole row, so a write that set
    no stamp (plain SQL) reaches the held client then."""
    from engine.lease_steps import FULL_READ_SECONDS

    harness.step("leases")  # the account ids the connections recorded: a full read, at this pass
    Agent.objects.filter(pk=agent.pk).update(typing_speed=33)
    with CaptureQueriesContext(connection) as queries:
        harness.step("leases")
    selects = _agent_selects(queries)
    assert len(selects) == 3, selects  # the stamps, the changed row, its model
    columns = selects[0].split(" FROM ")[0].removeprefix("SELECT ").split(", ")
    assert [c.strip('"') for c in columns] == ["id", "updated"]
    assert harness.gateway.clients[agent.pk].agent.typing_speed == 33

    with connection.cursor() as cursor:  # no stamp: not seen until the next full read
        cursor.execute("UPDATE agents_agent SET typing_speed = 44 WHERE id = %s", [agent.pk])
    harness.step("leases")
    assert harness.gateway.clients[agent.pk].agent.typing_speed == 33
    clock.advance(FULL_READ_SECONDS)
    harness.step("leases")
    assert harness.gateway.clients[agent.pk].agent.typing_speed == 44

    Agent.objects.filter(pk=other_agent.pk).update(stopped=True)  # stopped: dropped at the next pass
    harness.step("leases")
    assert other_agent.pk not in harness.gateway.clients
