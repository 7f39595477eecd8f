"""Periodic upkeep spread over passes (`GatewayContext.upkeep_waits`): once a pass has run
PASS_BUDGET_SECONDS, the looks that fell due on timers of their own wait for a later pass, and none
waits more than a whole period."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from engine.gateway_context import PASS_BUDGET_SECONDS
from engine.presence import PRESENCE_CHECK_SECONDS
from engine.upkeep import REQUEST_REAP_SECONDS
from engine.watchdog import CHECK_SECONDS

# Whole passes end with `close_old_connections`, which closes a connection held in a test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def _looked(gateway) -> dict[str, float | None]:
    steps = gateway.steps
    return {
        "presence": steps["presence"]._checked_at,
        "watchdog": gateway.watchdog._checked_at,
        "reap_requests": steps["reap_requests"]._reaped_at,
    }


def _pass(harness, *, leases_take: float) -> None:
    """One full pass whose lease step takes `leases_take` seconds of the injected clock."""
    gateway = harness.gateway
    leases = gateway.steps["leases"]
    run = leases.run

    async def slow() -> bool:
        did = await run()
        harness.clock.advance(leases_take)
        return did

    leases.run = slow
    try:
        async_to_sync(gateway.run_once)()
    finally:
        leases.run = run


def test_due_looks_wait_for_a_later_pass_once_the_pass_spent_its_budget(agent, harness, clock):
    harness.start()
    _pass(harness, leases_take=0)  # every look runs once, at this time
    first = _looked(harness.gateway)
    assert all(at is not None for at in first.values())

    assert CHECK_SECONDS == PRESENCE_CHECK_SECONDS
    clock.advance(CHECK_SECONDS)  # the watchdog's and presence's looks are due again
    _pass(harness, leases_take=2 * PASS_BUDGET_SECONDS)  # ... and this pass spent its budget early
    assert _looked(harness.gateway) == first  # neither looked: they wait for a later pass
    assert harness.gateway.context.pass_started is None  # the budget ends with its pass

    _pass(harness, leases_take=0)  # the next pass, within its budget: both look
    second = _looked(harness.gateway)
    assert second["presence"] > first["presence"] and second["watchdog"] > first["watchdog"]


def test_a_look_a_whole_period_late_runs_however_busy_the_pass(agent, harness, clock):
    harness.start()
    _pass(harness, leases_take=0)
    first = _looked(harness.gateway)

    clock.advance(REQUEST_REAP_SECONDS)  # all due; the 5 s looks a whole period late, the reaper not
    _pass(harness, leases_take=2 * PASS_BUDGET_SECONDS)
    looked = _looked(harness.gateway)
    assert looked["presence"] > first["presence"] and looked["watchdog"] > first["watchdog"]
    assert looked["reap_requests"] == first["reap_requests"]  # just due: it waits

    _pass(harness, leases_take=0)
    assert _looked(harness.gateway)["reap_requests"] > first["reap_requests"]


def test_a_step_run_outside_a_pass_never_waits(agent, harness, clock):
    harness.start()
    harness.step("presence")
    checked = harness.gateway.steps["presence"]._checked_at
    clock.advance(PRESENCE_CHECK_SECONDS)
    harness.step("presence")
    assert harness.gateway.steps["presence"]._checked_at > checked
