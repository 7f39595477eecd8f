"""What the conversations app records when other apps announce something (see their signals)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import Agent
from agents.signals import agent_restarted
from conversations.models import ActivityEvent
from conversations.services.activity import record_event


@receiver(agent_restarted, dispatch_uid="conversations.agent_restarted")
def record_agent_restart(sender, *, agent: Agent, by: str, was: str, **kwargs) -> None:
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent.pk,
        summary=f"{agent.name} restarted by {by} (was: {was})",
        data={"restarted_by": by, "was": was},
    )
