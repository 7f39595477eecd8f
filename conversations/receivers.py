"""What the conversations app does when other apps announce something (see their signals)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import Agent, GatewayRequest
from agents.signals import agent_restarted, gateway_request_created
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


@receiver(gateway_request_created, dispatch_uid="conversations.gateway_request_created")
def wake_for_gateway_request(sender, *, request: GatewayRequest, **kwargs) -> None:
    wake_gateways_on_commit([request.agent_id])
