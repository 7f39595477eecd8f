"""Reads about agents and their role prompts."""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.db.models import Q

from agents.models import Agent, AgentDocument, RolePrompt


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


def account_snapshot(*, agent: Agent):
    """The newest finished request that read the account's profile and contacts (None before any)."""
    from agents.models import GatewayRequest
    from agents.services.telegram_requests import ACCOUNT_KINDS

    return (
        GatewayRequest.objects.filter(agent=agent, kind__in=ACCOUNT_KINDS, status=GatewayRequest.Status.DONE)
        .order_by("-finished", "-id")
        .first()
    )


def telegram_requests_recent(*, agent: Agent, kinds=None, limit: int = 10):
    """The agent's newest gateway requests (of `kinds`), for the pages that show their outcome."""
    from agents.models import GatewayRequest

    qs = GatewayRequest.objects.filter(agent=agent)
    if kinds is not None:
        qs = qs.filter(kind__in=list(kinds))
    return list(qs.order_by("-created", "-id")[:limit])


def telegram_request_waiting(*, agent: Agent, kinds) -> bool:
    """Whether one of these requests still waits for (or runs in) a gateway."""
    from agents.models import GatewayRequest

    return GatewayRequest.objects.filter(
        agent=agent,
        kind__in=list(kinds),
        status__in=[GatewayRequest.Status.PENDING, GatewayRequest.Status.RUNNING],
    ).exists()


def agent_document(*, agent_id: int, name: str) -> str | None:
    """The content of the agent's document called `name` (as in a `file:NAME` URL), or None.

    The exact name wins; otherwise `Friends` finds `Friends.md` and `Friends.md` finds `Friends`.
    """
    name = name.strip()
    if not name:
        return None
    candidates = [name, name[: -len(".md")] if name.endswith(".md") else f"{name}.md"]
    found = dict(
        AgentDocument.objects.filter(agent_id=agent_id, name__in=candidates).values_list("name", "content")
    )
    for candidate in candidates:
        if candidate in found:
            return found[candidate]
    return None


def agent_notices(*, agent: Agent) -> list[str]:
    """Problems in the agent's configuration that it runs with anyway, each with its fix (dashboard)."""
    notices = []
    if agent.timezone:
        try:
            zoneinfo.ZoneInfo(agent.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            where = f"# Agent Timezone in {agent.source_file}" if agent.source_file else "its Timezone field"
            notices.append(
                f'Agent Timezone "{agent.timezone}" is not an IANA zone: its times (schedule, sleep, '
                f"events, the prompt's clock) use the site's TIME_ZONE ({settings.TIME_ZONE or 'UTC'}) "
                f"until it is fixed: write a zone such as Europe/Paris under {where} and run "
                "importagents, or edit the agent in the admin"
            )
    return notices
