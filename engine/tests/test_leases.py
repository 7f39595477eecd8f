"""Agent leases: one gateway per account; a live lease refuses, an expired one is taken over."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import async_to_sync

from agents.models import Agent, AgentLease
from conversations.models import ActivityEvent
from engine.leases import lease_acquire, lease_heartbeat, lease_release
from engine.tests.harness import Harness

pytestmark = pytest.mark.django_db


def test_a_live_lease_held_by_another_gateway_is_refused_with_a_clear_message(agent, clock, caplog):
    assert lease_acquire(agent=agent, holder="host-a:1:aa").acquired
    result = lease_acquire(agent=agent, holder="host-b:2:bb")
    assert not result.acquired
    assert "Wendy is driven by gateway host-a:1:aa" in result.message
    harness = Harness(clock, gateway_id="host-b:2:bb")
    harness.start()
    assert harness.gateway.clients == {}
    assert "refused: agent Wendy is driven by gateway host-a:1:aa" in caplog.text


def test_an_expired_lease_is_taken_over(agent, clock, settings):
    settings.CINDY_LEASE_SECONDS = 30
    lease_acquire(agent=agent, holder="host-a:1:aa")
    clock.advance(31)
    result = lease_acquire(agent=agent, holder="host-b:2:bb")
    assert result.acquired and "expired" in result.message
    assert AgentLease.objects.get().holder == "host-b:2:bb"


def test_a_heartbeat_keeps_the_lease_alive(agent, clock, settings):
    settings.CINDY_LEASE_SECONDS = 30
    lease_acquire(agent=agent, holder="gw")
    clock.advance(20)
    assert lease_heartbeat(holder="gw", agent_ids=[agent.pk]) == {agent.pk}
    clock.advance(20)
    assert not lease_acquire(agent=agent, holder="other").acquired
    assert AgentLease.objects.get().expires_at == clock.now() + dt.timedelta(seconds=10)


def test_a_gateway_that_lost_its_lease_drops_the_agent(agent, clock, settings):
    settings.CINDY_LEASE_SECONDS = 30
    harness = Harness(clock, gateway_id="gw-a")
    harness.start()
    assert list(harness.gateway.clients) == [agent.pk]
    clock.advance(31)
    assert lease_acquire(agent=agent, holder="gw-b").acquired
    async_to_sync(harness.gateway.heartbeat.run)(force=True)
    assert harness.gateway.clients == {}
    assert AgentLease.objects.get().holder == "gw-b"


def test_release_frees_only_our_leases(agent, other_agent, clock):
    lease_acquire(agent=agent, holder="gw-a")
    lease_acquire(agent=other_agent, holder="gw-b")
    assert lease_release(holder="gw-a") == 1
    assert list(AgentLease.objects.values_list("holder", flat=True)) == ["gw-b"]


def test_draining_the_gateway_releases_its_leases(agent, clock):
    harness = Harness(clock, gateway_id="gw-a")
    harness.start()
    harness.step("drain")
    assert not AgentLease.objects.exists()


def test_a_refusal_is_logged_once_while_the_same_gateway_keeps_renewing(agent, clock, caplog, settings):
    settings.CINDY_LEASE_SECONDS = 30
    lease_acquire(agent=agent, holder="host-a:1:aa")
    harness = Harness(clock, gateway_id="host-b:2:bb")
    for _ in range(4):  # host-a renews between our attempts: the refusal message's times change
        clock.advance(10)
        lease_heartbeat(holder="host-a:1:aa", agent_ids=[agent.pk])
        harness.step("leases")
    assert caplog.text.count("refused: agent Wendy") == 1

    AgentLease.objects.update(holder="host-c:3:cc")  # a different gateway now: worth saying again
    harness.step("leases")
    assert caplog.text.count("refused: agent Wendy") == 2


def _on_telegram(clock, gateway_id: str) -> Harness:
    """A gateway whose Telegram agents talk to the sandbox (the transport seam), so no account is needed."""
    from sandbox.transport.transport import SandboxTransport

    return Harness(
        clock,
        gateway_id=gateway_id,
        transport_factory=lambda a, gateway_id: SandboxTransport(a, gateway_id=gateway_id),
    )


def test_a_second_enabled_persona_on_the_same_phone_is_refused_naming_both(agent, clock, caplog):
    from engine.tests.cast import make_agent

    Agent.objects.filter(pk=agent.pk).update(transport="telegram")
    mary = make_agent(
        "Mary", phone="+1 555 000 0001", source_file="samples/agents/Mary.md", transport="telegram"
    )
    harness = _on_telegram(clock, "gw-a")
    harness.start()

    assert list(harness.gateway.clients) == [agent.pk]
    message = (
        "agent Mary is not started: its phone +1 555 000 0001 is also the phone of enabled agent Wendy, "
        "which runs on that Telegram account; one account runs one persona: disable Mary or Wendy, or give "
        "one of them its own phone"
    )
    assert f"refused: {message}" in caplog.text
    mary.refresh_from_db()
    assert mary.last_error == message  # shown in the admin
    assert (
        ActivityEvent.objects.filter(agent=mary, kind=ActivityEvent.Kind.AGENT_ERROR, summary=message).count()
        == 1
    )

    harness.step("leases")  # said once while nothing changes
    assert caplog.text.count("refused: agent Mary") == 1


def test_the_persona_already_running_keeps_the_phone_when_an_older_one_is_enabled(agent, clock):
    from engine.tests.cast import make_agent

    Agent.objects.filter(pk=agent.pk).update(transport="telegram", disabled=True)
    mary = make_agent("Mary", phone="+15550000001", transport="telegram")
    harness = _on_telegram(clock, "gw-a")
    harness.start()
    assert list(harness.gateway.clients) == [mary.pk]

    Agent.objects.filter(pk=agent.pk).update(disabled=False)  # Wendy is older, but Mary runs: Wendy waits
    other = _on_telegram(clock, "gw-b")
    other.step("leases")
    harness.step("leases")
    assert list(harness.gateway.clients) == [mary.pk] and other.gateway.clients == {}
    agent.refresh_from_db()
    assert "agent Wendy is not started: its phone +15550000001 is also the phone of enabled agent Mary" in (
        agent.last_error
    )

    Agent.objects.filter(pk=mary.pk).update(disabled=True)  # once Mary is disabled, Wendy starts
    harness.step("leases")
    assert list(harness.gateway.clients) == [agent.pk]


def test_sandbox_personas_may_share_a_phone_they_never_use(agent, clock):
    from engine.tests.cast import make_agent

    mary = make_agent("Mary", phone="+15550000001")
    harness = Harness(clock, gateway_id="gw-a")
    harness.start()

    assert set(harness.gateway.clients) == {agent.pk, mary.pk}
