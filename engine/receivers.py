"""What the engine does when other apps announce something (see their signals)."""

from __future__ import annotations

from django.dispatch import receiver

from agents.models import Agent
from agents.signals import spend_limits_changed
from engine.brakes import braked_turns_release


@receiver(spend_limits_changed, dispatch_uid="engine.spend_limits_changed")
def release_braked_turns(sender, *, agent: Agent, **kwargs) -> None:
    braked_turns_release(agent_id=agent.pk)
