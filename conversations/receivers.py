"""What the conversations app does when other apps announce something (see their signals)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import Agent, GatewayRequest
from agents.signals import agent_restarted, agent_timezone_changed, gateway_request_created
from agents.timezone_change import TimezoneChange
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from conversations.services.wake import wake_gateways_on_commit


@receiver(agent_restarted, dispatch_uid="conversations.agent_restarted")
def record_agent_restart(sender, *, agent: Agent, by: str, was: str, **kwargs) -> None:
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent.pk,
        summary=f"{agent.name} restarted by {by} (was: {was})",
        data={"restarted_by": by, "was": was},
    )


@receiver(agent_timezone_changed, dispatch_uid="conversations.agent_timezone_changed")
def record_timezone_change(
    sender, *, agent: Agent, before: str, change: str, bound: list[str], by: str, **kwargs
) -> None:
    """The change and, when the agent held events or a schedule, what the operator chose for them."""
    zones = f"{before or '(default)'} to {agent.timezone or '(default)'}"
    what = " and ".join(bound)
    if not change:
        outcome = "no future events or schedule entries to move"
    elif change == TimezoneChange.KEEP_LOCAL_TIMES:
        outcome = f"{what} keep their local times (moved to the same clock times)"
    else:
        outcome = f"{what} keep their instants (their local times shift)"
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent.pk,
        summary=f"{agent.name}'s timezone changed from {zones}{f' by {by}' if by else ''}: {outcome}",
        data={"timezone_before": before, "timezone": agent.timezone, "timezone_change": change, "by": by},
    )


@receiver(gateway_request_created, dispatch_uid="conversations.gateway_request_created")
def wake_for_gateway_request(sender, *, request: GatewayRequest, **kwargs) -> None:
    wake_gateways_on_commit([request.agent_id])
