"""Reads about agents and their role prompts."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Collection

from django.conf import settings
from django.db import connection
from django.db.models import Q

from agents.models import Agent, AgentDocument, AgentLease, GatewayRequest, RolePrompt
from cindy_site import rows


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


def phone_key(phone: str) -> str:
    """A phone number reduced to its digits, so "+1 555-123" and "+1555123" are the same account."""
    return "".join(ch for ch in phone if ch.isdigit())


def agents_by_phone(*, running_on_telegram: bool = False) -> dict[str, list[Agent]]:
    """Agents grouped by phone (digits compared), only the phones that more than one agent has.

    `running_on_telegram` keeps the agents a gateway would connect to a Telegram account: enabled, not
    stopped, on the Telegram transport (sandbox agents never use their phone). One query.
    """
    qs = Agent.objects.only("pk", "name", "phone", "disabled", "stopped", "source_file").order_by("pk")
    if running_on_telegram:
        qs = _on_telegram(qs)
    groups: dict[str, list[Agent]] = {}
    for agent in qs:
        groups.setdefault(phone_key(agent.phone), []).append(agent)
    return {key: agents for key, agents in groups.items() if key and len(agents) > 1}


def _on_telegram(qs):
    from agents.models import Transport

    return qs.filter(disabled=False, stopped=False, transport=Transport.TELEGRAM)


def shared_phone_keys() -> set[str]:
    """The phones (digits) that more than one enabled Telegram agent has. One query."""
    return set(agents_by_phone(running_on_telegram=True))


def phone_sharer_that_runs(*, agent: Agent, holding: Collection[int] = ()) -> Agent | None:
    """The enabled agent that runs on `agent`'s Telegram account instead of it, or None when `agent` may run.

    Among the enabled Telegram agents sharing one phone, the one whose lease is live runs (`holding`
    adds the agents this gateway drives); when none is, the oldest (lowest id) does. Every gateway
    computes the same answer from the database, so two gateways never start two personas on one
    account. A sandbox agent never connects to Telegram, so its phone is shared with no one.
    """
    from agents.models import AgentLease, Transport
    from cindy_site.clock import now

    key = phone_key(agent.phone)
    if not key or agent.transport != Transport.TELEGRAM:
        return None
    sharers = [
        other
        for other in _on_telegram(Agent.objects.exclude(pk=agent.pk)).order_by("pk")
        if phone_key(other.phone) == key
    ]
    if not sharers:
        return None
    live = set(
        AgentLease.objects.filter(agent__in=[*sharers, agent], expires_at__gte=now()).values_list(
            "agent_id", flat=True
        )
    ) | (set(holding) & {a.pk for a in [*sharers, agent]})
    for other in sharers:
        if other.pk in live:
            return other
    if agent.pk in live:
        return None
    return sharers[0] if sharers[0].pk < agent.pk else None


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


def agent_by_pk(*, agent_id: int) -> Agent | None:
    """The agent row, or None. Plain SQL: read for every ingested batch (engine/ingest.py); the ORM
    query cost about 0.2 ms of CPU against 0.02 ms through the cursor (as
    measured in cindy_site/rows.py)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {rows.columns(Agent, 'a')} FROM {rows.table(Agent)} a WHERE a.id = %s",  # noqa: S608
            [agent_id],
        )
        row = cursor.fetchone()
    return rows.from_row(Agent, row) if row else None


def telegram_user_is_agent(*, user_id: int) -> bool:
    """Whether this Telegram user id is one of the agents' accounts. Plain SQL: asked of every
    person's message (engine/loops.py), as `agent_by_pk` says why."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {rows.table(Agent)} WHERE telegram_user_id = %s LIMIT 1",  # noqa: S608
            [user_id],
        )
        return cursor.fetchone() is not None


def lease_held(*, agent_id: int, holder: str, at: dt.datetime) -> bool:
    """Whether `holder` holds a lease on the agent that is live at `at`. Plain SQL: asked before each
    write of a connected account's Telegram session (agents/telethon_session.py), about once a minute
    per account with traffic and once per account after connecting, as `agent_by_pk` says why."""
    expires = AgentLease._meta.get_field("expires_at")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {rows.table(AgentLease)} "  # noqa: S608
            "WHERE agent_id = %s AND holder = %s AND expires_at > %s LIMIT 1",
            [agent_id, holder, rows.value_of(expires, at)],
        )
        return cursor.fetchone() is not None


def role_prompts_named(*, names: list[str], agent_id: int) -> list[tuple[str, str]]:
    """(name, text) of the role prompts called `names`, global ones (scope 0) before the agent's
    own, as `included_prompts` merges them. Plain SQL: read by every turn before its LLM request
    (llm/prompt/sections.py), as `agent_by_pk` says why."""
    if not names:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT name, text FROM {rows.table(RolePrompt)} "  # noqa: S608
            f"WHERE name IN ({', '.join(['%s'] * len(names))}) AND scope_key IN (0, %s) "
            "ORDER BY scope_key, id",
            [*names, agent_id],
        )
        return [tuple(row) for row in cursor.fetchall()]


def _agent_columns() -> list:
    pk = Agent._meta.pk
    return [pk, *(f for f in Agent._meta.concrete_fields if f is not pk)]


#: Where `updated` is in a row of `agents_wanted_rows`.
WANTED_ROW_UPDATED = [f.name for f in _agent_columns()].index("updated")


def agents_wanted_rows(
    *, names: Collection[str] | None = None, ids: Collection[int] | None = None, stamps: bool = False
) -> list[tuple]:
    """The enabled, not stopped agents (of `names`, of `ids`), in name order, as rows of the database
    driver: the id, then every other column in `_meta` order (`stamps`: the id and `updated` only),
    nothing converted. Plain SQL: the gateway reads the stamps at most passes and the whole rows of the
    agents whose stamp changed, builds an `Agent` only of a row that changed since its last read
    (engine/lease_steps.py), and reads every row now and then; the rows compare cheaply as the driver
    gives them. At 1,000 agents the stamps cost about a fifth of the rows (1 to 1.5 ms against 5 to
    5.5 ms of CPU, SQLite and MariaDB, in one process on a two-core machine)."""
    q = connection.ops.quote_name
    fields = [Agent._meta.pk, Agent._meta.get_field("updated")] if stamps else _agent_columns()
    columns = ", ".join(q(f.column) for f in fields)
    names = list(names or [])
    among = f" AND name IN ({', '.join(['%s'] * len(names))})" if names else ""
    if ids is not None:
        ids = [int(i) for i in ids]
        if not ids:
            return []
        among += f" AND id IN ({', '.join(['%s'] * len(ids))})"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {rows.table(Agent)} WHERE disabled = %s AND stopped = %s{among} "  # noqa: S608
            "ORDER BY name",
            [False, False, *names, *(ids or [])],
        )
        return [tuple(row) for row in cursor.fetchall()]


def mute_requests_pending(*, agent_id: int, since: dt.datetime | None = None) -> list[int]:
    """Peers whose mute change waits for (or runs in) the gateway, or finished at or after `since`.

    A dialog list read before a mute change reached Telegram shows the old state; `since` (when the
    list's read began) names the changes it may not show."""
    unfinished = Q(status__in=[GatewayRequest.Status.PENDING, GatewayRequest.Status.RUNNING])
    return [
        int(params.get("peer_id", 0))
        for params in GatewayRequest.objects.filter(
            unfinished if since is None else unfinished | Q(finished__gte=since),
            agent_id=agent_id,
            kind=GatewayRequest.Kind.SET_MUTED,
        ).values_list("params", flat=True)
    ]
