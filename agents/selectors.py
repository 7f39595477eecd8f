"""Reads about agents and their role prompts."""

from __future__ import annotations

from django.db.models import Q

from agents.models import Agent, RolePrompt


def agent_by_name(*, name: str) -> Agent | None:
    return Agent.objects.filter(name=name).first()


def role_prompt_for(*, agent: Agent, name: str) -> RolePrompt | None:
    """The prompt called `name` for this agent: its own override if it has one, else the global one."""
    candidates = RolePrompt.objects.filter(Q(agent=agent) | Q(agent__isnull=True), name=name)
    by_scope = {prompt.agent_id: prompt for prompt in candidates}
    return by_scope.get(agent.pk) or by_scope.get(None)


def role_prompts_for_agent(*, agent: Agent) -> list[RolePrompt]:
    """The agent's role prompts in the order of its "Role Prompt" section; missing names are skipped."""
    names = list(agent.role_prompt_names or [])
    found: dict[str, RolePrompt] = {}
    for prompt in RolePrompt.objects.filter(Q(agent=agent) | Q(agent__isnull=True), name__in=names):
        if prompt.name not in found or prompt.agent_id == agent.pk:
            found[prompt.name] = prompt
    return [found[name] for name in names if name in found]


def missing_role_prompts(*, agent: Agent) -> list[str]:
    """Names in the agent's "Role Prompt" section that no global or agent prompt provides."""
    present = {prompt.name for prompt in role_prompts_for_agent(agent=agent)}
    return [name for name in agent.role_prompt_names or [] if name not in present]
