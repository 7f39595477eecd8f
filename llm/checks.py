"""System checks: every LLM name in the configuration must route somewhere."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register
from django.db import DatabaseError

from llm.routing import UnknownModelError, resolve


@register()
def check_llm_names(app_configs, **kwargs):
    """DEFAULT_AGENT_LLM, MEDIA_MODEL and each agent's LLM (and conversation overrides) must be known."""
    errors = []
    for variable in ("DEFAULT_AGENT_LLM", "MEDIA_MODEL"):
        try:
            resolve(getattr(settings, variable))
        except UnknownModelError as exc:
            errors.append(Error(f"{variable}: {exc}", id="cindy.E101"))
    try:
        from agents.models import Agent
        from conversations.models import Conversation

        named = list(Agent.objects.exclude(llm="").values_list("name", "llm"))
        overrides = list(
            Conversation.objects.exclude(llm_model="").values_list("agent__name", "peer_id", "llm_model")
        )
    except DatabaseError:
        return errors  # no tables yet (before migrate): nothing to check
    for name, llm in named:
        try:
            resolve(llm)
        except UnknownModelError as exc:
            errors.append(
                Error(f'agent {name}: "LLM" {exc}', hint="Fix the agent's LLM in the admin.", id="cindy.E102")
            )
    for agent_name, peer_id, llm in overrides:
        try:
            resolve(llm)
        except UnknownModelError as exc:
            errors.append(
                Error(
                    f"agent {agent_name}, conversation {peer_id}: llm_model {exc}",
                    hint="Fix the conversation's LLM override in the admin.",
                    id="cindy.E103",
                )
            )
    return errors
