"""Agents: list, read, change the timezone, enable, disable and restart (the admin's services:
`agents.services.curation`)."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from django.core.exceptions import ValidationError
from django.http import HttpRequest
from ninja import Field, Router, Schema

from agents.access import agents_for
from agents.models import Agent
from agents.services import curation
from agents.timezone_change import TimezoneChange
from api.core import DEFAULT_LIMIT, ERRORS, ApiError, Limit, Offset, RowId, page, page_schema, visible_agent

router = Router(tags=["agents"])
CHANGE = "agents.change_agent"


class AgentOut(Schema):
    id: int
    name: str
    config_name: str
    transport: str
    telegram_username: str
    timezone: str
    llm: str
    disabled: bool
    stopped: bool
    gagged: bool
    running: bool
    last_error: str
    last_error_at: dt.datetime | None


AgentPage = page_schema(AgentOut, "AgentPage")

ChangeChoice = Literal[tuple(TimezoneChange.values)]  # type: ignore[valid-type]


class AgentPatch(Schema):
    timezone: str = Field(max_length=64, description="IANA zone, e.g. Europe/Paris; empty: the site's")
    timezone_change: ChangeChoice | None = Field(  # type: ignore[valid-type]
        None,
        description="Required when the agent has future events or schedule entries: keep_local_times "
        "(they keep their clock times in the new zone) or keep_instants (they stay at the same moments)",
    )


def agent_row(agent: Agent) -> dict:
    return {
        "id": agent.pk,
        "name": agent.name,
        "config_name": agent.config_name,
        "transport": agent.transport,
        "telegram_username": agent.telegram_username,
        "timezone": agent.timezone,
        "llm": agent.llm,
        "disabled": agent.disabled,
        "stopped": agent.stopped,
        "gagged": agent.gagged,
        "running": agent.is_active,
        "last_error": agent.last_error,
        "last_error_at": agent.last_error_at,
    }


@router.get("", response={200: AgentPage, **ERRORS}, summary="List the agents you may see")
def agent_list(request: HttpRequest, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0):
    agents = agents_for(request.user).order_by("name", "id")
    return page(request, agents, limit=limit, offset=offset, row=agent_row)


@router.get("/{agent_id}", response={200: AgentOut, **ERRORS}, summary="Read one agent")
def agent_read(request: HttpRequest, agent_id: RowId):
    return agent_row(visible_agent(request, agent_id))


@router.patch("/{agent_id}", response={200: AgentOut, **ERRORS}, summary="Change an agent's timezone")
def agent_update(request: HttpRequest, agent_id: RowId, body: AgentPatch):
    """As the admin's agent form: a new timezone while the agent has future events or schedule
    entries needs `timezone_change` (else 422 naming it); the activity stream records the change."""
    agent = visible_agent(request, agent_id, CHANGE)
    agent.timezone = body.timezone.strip()
    try:
        curation.agent_save(
            agent=agent, timezone_change=body.timezone_change or "", by=request.user.get_username()
        )
    except ValidationError as exc:
        if not hasattr(exc, "error_dict"):
            raise ApiError(422, " ".join(exc.messages)) from None
        field, errors = next(iter(exc.message_dict.items()))
        raise ApiError(422, " ".join(errors), field=field) from None
    return agent_row(agent)


@router.post("/{agent_id}/enable", response={200: AgentOut, **ERRORS}, summary="Enable (or restart) an agent")
def agent_enable(request: HttpRequest, agent_id: RowId):
    """As the admin's "Enable or restart" action: a disabled or stopped agent runs again (its stop and
    last error are cleared, and the activity stream records the restart); a running one is left alone."""
    agent = visible_agent(request, agent_id, CHANGE)
    if agent.disabled or agent.stopped:
        curation.agent_restart(agent=agent, by=request.user.get_username())
    return agent_row(agent)


@router.post("/{agent_id}/disable", response={200: AgentOut, **ERRORS}, summary="Disable an agent")
def agent_disable(request: HttpRequest, agent_id: RowId):
    """No gateway drives a disabled agent; its gateway lets go of it at its next scan."""
    agent = visible_agent(request, agent_id, CHANGE)
    return agent_row(curation.agent_set_disabled(agent=agent, disabled=True))


@router.post("/{agent_id}/restart", response={200: AgentOut, **ERRORS}, summary="Restart an agent")
def agent_restart(request: HttpRequest, agent_id: RowId):
    """As the admin's Restart button: clears disabled, stopped and the last error, and records it."""
    agent = visible_agent(request, agent_id, CHANGE)
    return agent_row(curation.agent_restart(agent=agent, by=request.user.get_username()))
