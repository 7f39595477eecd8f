"""Edits made by people in the admin: agents and role prompts.

The admin calls these instead of `save()` so that the same validation applies however a row changes.
"""

from __future__ import annotations

import zoneinfo

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import Agent, AgentDocument, RolePrompt
from agents.signals import agent_restarted, agent_timezone_changed, spend_limits_changed
from agents.timezone_change import timezone_change_check
from cindy_site.llm_names import UnknownModelError, is_default_name, resolve


def agent_validate(*, agent: Agent) -> None:
    """Raise ValidationError naming each bad field and its fix."""
    errors: dict[str, str] = {}
    if agent.timezone:
        try:
            zoneinfo.ZoneInfo(agent.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            errors["timezone"] = f'"{agent.timezone}" is not an IANA zone (e.g. Europe/Paris)'
    if agent.llm:
        try:
            resolve(agent.llm)
        except UnknownModelError as exc:
            errors["llm"] = str(exc)
    for name in agent.llm_fallback if isinstance(agent.llm_fallback, list) else []:
        if not isinstance(name, str) or is_default_name(name):
            errors["llm_fallback"] = f"{name!r} is not an LLM name: list names such as gpt-5-mini"
            break
        try:
            resolve(name)
        except UnknownModelError as exc:
            errors["llm_fallback"] = str(exc)
            break
    for field in ("llm_fallback", "role_prompt_names", "sticker_set_names", "explicit_stickers"):
        value = getattr(agent, field)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            errors[field] = f"must be a JSON list of strings, got {value!r}"
    notes = agent.flag_notes
    if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
        errors["flag_notes"] = (
            f'must be a JSON object of heading: text, e.g. {{"Disabled": "Paused"}}, got {notes!r}'
        )
    bad = [s for s in agent.explicit_stickers if isinstance(s, str) and "::" not in s]
    if bad and "explicit_stickers" not in errors:
        errors["explicit_stickers"] = f'{bad[0]!r} is not "SET::NAME"'
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def agent_save(*, agent: Agent, timezone_change: str = "", by: str = "") -> Agent:
    """Validate and store an agent edited by a person.

    A changed timezone while the agent holds future events or schedule entries needs
    `timezone_change` (agents/timezone_change.py), else ValidationError names that field; the
    change is then announced (`agent_timezone_changed`) in this transaction.
    """
    agent_validate(agent=agent)
    agent.full_clean(validate_unique=True)
    limits = ("daily_spend_cap", "partner_turns_per_minute", "partner_turns_per_day")
    stored = Agent.objects.filter(pk=agent.pk).values_list("timezone", *limits).first() if agent.pk else None
    before = stored[1:] if stored else None
    old_zone = stored[0] if stored else None
    bound = timezone_change_check(agent=agent, before=old_zone, change=timezone_change)
    agent.save()
    if before is not None and before != tuple(getattr(agent, name) for name in limits):
        spend_limits_changed.send(sender=Agent, agent=agent)
    if old_zone is not None and old_zone != agent.timezone:
        agent_timezone_changed.send(
            sender=Agent,
            agent=agent,
            before=old_zone,
            change=timezone_change if bound else "",
            bound=bound,
            by=by,
        )
    return agent


def agent_restart(*, agent: Agent, by: str) -> Agent:
    """Let a disabled or stopped agent run again; the gateway picks it up at its next scan.

    Clears `disabled`, `stopped` (set by a shutdown task or an authorization error) and the error
    that stopped it, then sends `agent_restarted` (the activity stream records it).
    """
    was = [reason for reason, flag in (("disabled", agent.disabled), ("stopped", agent.stopped)) if flag]
    if agent.last_error:
        was.append(f"last error: {agent.last_error}")
    with transaction.atomic():
        Agent.objects.filter(pk=agent.pk).update(
            disabled=False, stopped=False, last_error="", last_error_at=None
        )
        agent.disabled = agent.stopped = False
        agent.last_error, agent.last_error_at = "", None
        agent_restarted.send(sender=Agent, agent=agent, by=by, was="; ".join(was) or "running")
    return agent


def agent_set_disabled(*, agent: Agent, disabled: bool) -> Agent:
    """Disable or enable an agent; a disabled agent is not driven by any gateway."""
    Agent.objects.filter(pk=agent.pk).update(disabled=disabled)
    agent.disabled = disabled
    return agent


def role_prompt_validate(*, prompt: RolePrompt) -> None:
    if not prompt.name.strip():
        raise ValidationError({"name": "a role prompt needs a name (the persona's Role Prompt line)"})
    clash = RolePrompt.objects.filter(scope_key=prompt.agent_id or 0, name=prompt.name).exclude(pk=prompt.pk)
    if clash.exists():
        scope = prompt.agent.name if prompt.agent_id else "global"
        raise ValidationError(
            {"name": f'a {scope} prompt named "{prompt.name}" already exists: edit that one'}
        )


@transaction.atomic
def role_prompt_save(*, prompt: RolePrompt) -> RolePrompt:
    """Store a role prompt edited by a person. An agent's prompt overrides the global one of that name."""
    role_prompt_validate(prompt=prompt)
    prompt.scope_key = prompt.agent_id or 0
    prompt.full_clean(exclude=["scope_key"])
    prompt.save()
    return prompt


# Documents are read into the prompt when the agent retrieves them; a million characters is far more
# than any model reads usefully in one go, so a bigger document is almost certainly a mistake.
MAX_DOCUMENT_CHARS = 1_000_000


def agent_document_validate(*, document: AgentDocument) -> None:
    """The name is a file name in the agent's docs folder (export writes it there); the size is bounded."""
    name = document.name or ""
    if not name.strip() or "/" in name or "\\" in name or name.startswith(".") or name != name.strip():
        raise ValidationError(
            {"name": "a file name such as Friends.md: no / or \\, no leading dot or surrounding spaces"}
        )
    if len(document.content or "") > MAX_DOCUMENT_CHARS:
        raise ValidationError(
            {"content": f"at most {MAX_DOCUMENT_CHARS:,} characters: split it into several documents"}
        )


def agent_document_save(*, document: AgentDocument) -> AgentDocument:
    """Validate and store a document edited by a person."""
    agent_document_validate(document=document)
    document.save()
    return document
