"""What the memory app does when other apps announce something (see their signals)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import Agent
from agents.signals import agent_timezone_changed
from memory.services.timezone_move import agent_local_times_move


@receiver(agent_timezone_changed, dispatch_uid="memory.agent_timezone_changed")
def move_local_times(sender, *, agent: Agent, before: str, change: str, bound: list[str], **kwargs) -> None:
    if change:
        agent_local_times_move(agent=agent, before=before, change=change)
