"""Per-agent access: which agents a staff user may see and act on.

The rule, everywhere staff see agent data (the admin, the dashboard, its socket, the REST API):
- owners (superusers, and members of the Owner group) see every agent;
- anybody else sees an agent when they hold the model permission asked for (their role) AND a grant
  for that agent (`AgentGrant`, to them or to one of their groups; a grant without an agent covers
  every agent);
- inactive users see nothing.

Seeing an agent means seeing its conversations, messages, memories and every other record that
belongs to it; `AGENT_PATHS` says how each such model reaches its agent, and `visible_to` filters a
queryset of any of them.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db.models import Q, QuerySet

from agents.models import Agent, AgentGrant
from agents.roles import OWNER

#: The permission `agents_for(user)` checks when no other is named.
SEE_AGENTS = "agents.view_agent"

#: How records of each agent-scoped model reach their agent (an ORM lookup path to `Agent`).
#: Models not listed are shared catalogues (media descriptions, stickers, prices) or owner-only
#: plumbing (`OWNER_ONLY`); `cindy_site/tests/test_agent_access_admin.py` checks every admin model
#: is in one of the three.
AGENT_PATHS: dict[str, str] = {
    "agents.agent": "",
    "agents.roleprompt": "agent",
    "agents.agentdocument": "agent",
    "agents.agentlease": "agent",
    "agents.telegramsession": "agent",
    "agents.telegramupdatestate": "agent",
    "agents.telegramentity": "agent",
    "agents.gatewayrequest": "agent",
    "agents.agentgrant": "agent",
    "memory.memory": "agent",
    "memory.curatedmemoryfile": "agent",
    "memory.plan": "agent",
    "memory.summary": "agent",
    "memory.note": "agent",
    "memory.intention": "agent",
    "memory.scheduledevent": "agent",
    "memory.scheduleentry": "agent",
    "memory.schedulerefresh": "agent",
    "media_catalog.libraryitem": "agent",
    "media_catalog.stickeraccess": "agent",
    "conversations.voicenote": "agent",
    "conversations.backfillmark": "agent",
    "conversations.conversation": "agent",
    "conversations.message": "conversation__agent",
    "conversations.activityevent": "agent",
    "llm.llmcall": "agent",
    "llm.explicitcache": "conversation__agent",
    "llm.translation": "llm_call__agent",
    "conversations.taskgraph": "conversation__agent",
    "conversations.tasknode": "agent",
    "sandbox.sandboxuser": "agent",
    "llm.llmusagedaily": "agent",
}

#: Records that belong to no single agent, or to the site's plumbing: only owners see them.
OWNER_ONLY: frozenset[str] = frozenset(
    {
        "sandbox.sandboxchat",
        "sandbox.sandboxmember",
        "sandbox.sandboxmessage",
        "sandbox.sandboxupdate",
        "sandbox.sandboxtopic",
        "conversations.gatewaywake",
        "agents.accessrequest",
        "llm.routebreaker",  # the LLM routes' health, shared by every agent's calls
        "llm.llmendpoint",  # the installation's model servers, with their API keys
    }
)


def is_owner(user: Any) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_cindy_is_owner", None)
    if cached is None:
        cached = user.groups.filter(name=OWNER).exists()
        user._cindy_is_owner = cached
    return cached


def _grants(user: Any) -> QuerySet[AgentGrant]:
    return AgentGrant.objects.filter(Q(user=user) | Q(group__user=user))


def visible_agent_ids(user: Any, perm: str | None = None) -> frozenset[int] | None:
    """The ids of the agents `user` may see (or holds `perm` on); None means every agent, with the
    records that belong to no agent (events of the gateway itself, for instance)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    if is_owner(user):
        return None
    if not user.has_perm(perm or SEE_AGENTS):
        return frozenset()
    grants = _grants(user)
    if grants.filter(agent__isnull=True).exists():
        return None
    return frozenset(grants.values_list("agent_id", flat=True))


def agents_for(user: Any, perm: str | None = None) -> QuerySet[Agent]:
    """The agents `user` may see (perm None), or on which they hold `perm` ("app_label.codename")."""
    ids = visible_agent_ids(user, perm)
    if ids is None:
        return Agent.objects.all()
    return Agent.objects.filter(pk__in=ids)


def has_agent_perm(user: Any, perm: str, agent: Agent | int) -> bool:
    """Whether `user` holds `perm` on `agent` (an Agent or its id)."""
    agent_id = agent.pk if isinstance(agent, Agent) else int(agent)
    ids = visible_agent_ids(user, perm)
    return ids is None or agent_id in ids


def agent_path(model: type) -> str | None:
    """The lookup from `model` to its agent ("" for Agent itself), or None when it has none."""
    return AGENT_PATHS.get(model._meta.label_lower)


def visible_to(user: Any, queryset: QuerySet, perm: str | None = None) -> QuerySet:
    """`queryset` narrowed to the records of agents `user` may see. Owner-only models come back
    empty for everybody else; shared models come back whole."""
    label = queryset.model._meta.label_lower
    if label in OWNER_ONLY:
        return queryset if is_owner(user) else queryset.none()
    path = AGENT_PATHS.get(label)
    if path is None:
        return queryset
    ids = visible_agent_ids(user, perm)
    if ids is None:
        return queryset
    return queryset.filter(**{f"{path}__in" if path else "pk__in": ids})


def keep_rows(rows: list[dict[str, Any]], ids: Collection[int] | None, key: str = "agent_id") -> list[dict]:
    """Dashboard rows (dicts with an agent id under `key`) the holder of `ids` may see."""
    if ids is None:
        return rows
    return [row for row in rows if row.get(key) in ids]
