"""Which agents a staff user may see and act on.

Every agent-scoped read and write outside Django's own admin (the REST API, first) asks these two
functions, so that one place decides. A superuser, or a user holding the model permission in
question, may act on every agent. `agents_for(user)` without a permission lists the agents the user
may see at all: every agent for a user who holds any permission of the `agents` app's Agent model
(view or change), none otherwise.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.models import Agent

#: The permissions that let a user see an agent at all (perm=None).
SEE_AGENT = ("agents.view_agent", "agents.change_agent")


def _usable(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active)


def _allowed(user: Any, perm: str | None) -> bool:
    if not _usable(user):
        return False
    if user.is_superuser:
        return True
    if perm is None:
        return any(user.has_perm(name) for name in SEE_AGENT)
    return user.has_perm(perm)


def agents_for(user: Any, perm: str | None = None) -> QuerySet[Agent]:
    """The agents `user` may see (perm None), or on which they hold `perm` ("app_label.codename")."""
    if not _allowed(user, perm):
        return Agent.objects.none()
    return Agent.objects.all()


def has_agent_perm(user: Any, perm: str, agent: Agent | int) -> bool:
    """Whether `user` holds `perm` on `agent` (an Agent or its id); False for an agent that does not exist."""
    agent_id = agent.pk if isinstance(agent, Agent) else agent
    if not _allowed(user, perm):
        return False
    return Agent.objects.filter(pk=agent_id).exists()
