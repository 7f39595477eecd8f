"""Health: the rows gateways and worker pools write, and what `installation_health` makes of them."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from agents.models import AgentLease
from engine.health import (
    gateway_forget,
    installation_health,
    process_alerts,
    process_beat,
    processes_forget_gone,
)
from engine.models import ProcessHeartbeat
from engine.tests.harness import Harness

pytestmark = pytest.mark.django_db
Kind = ProcessHeartbeat.Kind


@pytest.fixture(autouse=True)
def short_limits(settings):
    settings.CINDY_LEASE_SECONDS = 30
    settings.CINDY_TICK_STALL_SECONDS = 120
    settings.REDIS_URL = ""


def _lease(agent, clock, holder="gw-1"):
    at = clock.now()
    AgentLease.objects.create(
        agent=agent, holder=holder, acquired_at=at, heartbeat_at=at, expires_at=at + dt.timedelta(seconds=30)
    )


def _up(agent, clock, *, gateway="gw-1"):
    """A gateway holding `agent`, and a worker pool, both having just reported."""
    _lease(agent, clock, gateway)
    process_beat(name=gateway, kind=Kind.GATEWAY, pass_at=clock.now(), renewed_at=clock.now(), held=1)
    process_beat(name="workers:h:1", kind=Kind.WORKERS, serves=gateway, workers=2)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_gateway_and_a_pool_that_just_reported_with_every_agent_held_are_healthy(agent, clock):
    _up(agent, clock)
    health = installation_health()
    assert health.ok, health.problems
    assert {row.name for row in health.processes} == {"gw-1", "workers:h:1"}


def test_a_gateway_silent_for_longer_than_the_lease_is_down_with_the_reason(agent, clock):
    _up(agent, clock)
    clock.advance(31)
    process_beat(name="workers:h:1", kind=Kind.WORKERS, workers=2)
    problems = installation_health().problems
    assert any("gateway gw-1" in p and "no heartbeat for 31 s" in p for p in problems), problems
    assert "agent Wendy: no gateway drives it (no live lease)" in problems
    assert not any("workers:h:1" in p for p in problems)


def test_a_gateway_whose_loop_stopped_passing_has_a_stalled_tick(agent, clock):
    _up(agent, clock)
    clock.advance(121)
    AgentLease.objects.update(expires_at=clock.now() + dt.timedelta(seconds=30))
    process_beat(name="gw-1", kind=Kind.GATEWAY, renewed_at=clock.now(), held=1)
    process_beat(name="workers:h:1", kind=Kind.WORKERS, workers=2)
    problems = installation_health().problems
    assert len(problems) == 1 and "tick stalled: its loop last finished a pass 121 s ago" in problems[0]


def test_a_gateway_that_stopped_renewing_its_leases_is_down(agent, clock):
    _up(agent, clock)
    clock.advance(31)
    AgentLease.objects.update(expires_at=clock.now() + dt.timedelta(seconds=30))
    process_beat(name="gw-1", kind=Kind.GATEWAY, pass_at=clock.now(), held=1)
    process_beat(name="workers:h:1", kind=Kind.WORKERS, workers=2)
    problems = installation_health().problems
    assert problems == [
        "gateway gw-1 (pid {} on {}): the leases of its 1 agent(s) were last renewed 31 s ago".format(
            *ProcessHeartbeat.objects.filter(name="gw-1").values_list("pid", "host").get()
        )
    ]


def test_planning_no_worker_takes_is_down(agent, clock):
    _up(agent, clock)
    ProcessHeartbeat.objects.filter(name="gw-1").update(stalled_since=clock.now())
    problems = installation_health().problems
    assert len(problems) == 1 and "planning stalled since" in problems[0]


def test_gateways_without_any_worker_pool_are_down(agent, clock):
    _up(agent, clock)
    ProcessHeartbeat.objects.filter(kind=Kind.WORKERS).delete()
    assert installation_health().problems[0].startswith("no task worker pool is running")


def test_agents_with_no_gateway_at_all_say_to_start_one(agent, clock):
    assert installation_health().problems == [
        "agent Wendy: no gateway drives it (no live lease): no gateway is running; start `manage.py runagents`"
    ]


def test_stopped_and_disabled_agents_need_no_gateway(agent, clock):
    agent.stopped = True
    agent.save()
    assert installation_health().ok


def test_a_process_gone_from_this_host_is_reported_then_removed_by_the_next_of_its_kind(agent, clock):
    _up(agent, clock)
    dead = _dead_pid()
    process_beat(name="workers:h:2", kind=Kind.WORKERS, pid=dead, workers=2)
    problems = installation_health().problems
    assert any("workers:h:2" in p and "is gone" in p for p in problems), problems
    assert processes_forget_gone(kind=Kind.WORKERS) == ["workers:h:2"]
    assert installation_health().ok


def test_a_stopping_gateway_forgets_itself_and_the_pool_it_started(agent, clock):
    _up(agent, clock)
    process_beat(name="workers:other", kind=Kind.WORKERS, workers=1)
    assert gateway_forget(gateway_id="gw-1") == 2
    assert list(ProcessHeartbeat.objects.values_list("name", flat=True)) == ["workers:other"]


def test_the_dashboard_alerts_name_a_stalled_gateway_in_one_query(agent, clock, django_assert_num_queries):
    _up(agent, clock)
    clock.advance(40)
    process_beat(name="workers:h:1", kind=Kind.WORKERS, workers=2)
    with django_assert_num_queries(1):
        alerts = process_alerts()
    assert len(alerts) == 1 and alerts[0].startswith("gateway gw-1") and "no heartbeat for 40 s" in alerts[0]


def test_the_gateway_reports_its_pass_leases_and_watchdog_in_its_row(agent, clock):
    harness = Harness(clock)
    harness.start()
    # A pass ends by closing connections Django finds obsolete: inside the test's transaction, that
    # would be the test's own.
    harness.gateway._close_old_connections = lambda: None
    async_to_sync(harness.gateway.heartbeat.run)(force=True)
    async_to_sync(harness.gateway.run_once)()

    async def beat():
        assert harness.gateway.heartbeat.start_beat()
        await harness.gateway.heartbeat.beat

    async_to_sync(beat)()
    row = ProcessHeartbeat.objects.get(name="gw-test")
    assert (row.kind, row.held, row.pass_at, row.renewed_at, row.stalled_since) == (
        Kind.GATEWAY,
        1,
        clock.now(),
        clock.now(),
        None,
    )
    harness.gateway.watchdog.stalled_agents, harness.gateway.watchdog.stalled_at = [agent.pk], clock.now()
    clock.advance(11)
    async_to_sync(beat)()
    row.refresh_from_db()
    assert row.stalled_since == clock.now() - dt.timedelta(seconds=11)


def test_manage_py_health_exits_non_zero_with_the_reasons(agent, clock, capsys):
    _up(agent, clock)
    call_command("health")
    assert "healthy" in capsys.readouterr().out
    clock.advance(31)
    with pytest.raises(SystemExit) as exit_:
        call_command("health")
    assert exit_.value.code == 1
    assert "DOWN: gateway gw-1" in capsys.readouterr().err


def test_manage_py_health_forgets_a_retired_process(agent, clock, capsys):
    _up(agent, clock)
    process_beat(name="gw-old", kind=Kind.GATEWAY, pass_at=clock.now() - dt.timedelta(hours=1))
    with pytest.raises(SystemExit):
        call_command("health")
    call_command("health", "--forget", "gw-old")
    assert "healthy" in capsys.readouterr().out


def test_an_open_llm_breaker_is_reported_with_its_route_and_last_error(agent, clock, settings):
    from llm.breakers import breaker_failure
    from llm.routing import Route

    settings.CINDY_LLM_BREAKER_FAILURES = 1
    _up(agent, clock)
    breaker_failure(Route("gemini", "gemini-3-flash-preview"), error="Gemini answered 503: overloaded")

    problems = installation_health().problems

    assert len(problems) == 1
    assert problems[0].startswith("LLM route gemini/gemini-3-flash-preview: circuit breaker open until ")
    assert "after 1 failed calls in a row (last error: Gemini answered 503: overloaded)" in problems[0]


def test_manage_py_health_reports_an_open_breaker_until_a_probe_closes_it(agent, clock, settings, capsys):
    from llm.breakers import breaker_admits, breaker_failure, breaker_success, breakers_of
    from llm.models import RouteBreaker
    from llm.routing import Route

    settings.CINDY_LLM_BREAKER_FAILURES = 1
    route = Route("openai", "gpt-5-mini")
    _up(agent, clock)
    breaker_failure(route, error="openai answered 503")
    with pytest.raises(SystemExit):
        call_command("health")
    assert "DOWN: LLM route openai/gpt-5-mini: circuit breaker open until" in capsys.readouterr().err

    RouteBreaker.objects.update(open_until=clock.now())  # the cool-down is over
    assert breaker_admits(route, breakers_of([route])[route])
    breaker_success(route, breakers_of([route])[route])
    call_command("health")
    assert "healthy" in capsys.readouterr().out
