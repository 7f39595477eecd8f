"""Agent leases: one account, one connection.

A gateway drives an agent only while it holds the agent's `AgentLease` row. Taking it is a
compare-and-set (insert, or update where the holder is us or the lease has expired); a live lease
held by another gateway is refused. The holder renews it with a heartbeat and deletes it on exit.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from agents.models import Agent, AgentLease
from agents.selectors import phone_sharer_that_runs
from cindy_site.clock import now
from conversations.models import ActivityEvent
from conversations.services.activity import record_event


@dataclass(frozen=True)
class LeaseResult:
    acquired: bool
    message: str = ""
    holder: str = ""  # who holds it, when refused


def _ttl() -> dt.timedelta:
    return dt.timedelta(seconds=settings.CINDY_LEASE_SECONDS)


def lease_acquire(*, agent: Agent, holder: str) -> LeaseResult:
    """Take the agent's lease if it is free, ours, or expired; otherwise say who holds it."""
    when = now()
    try:
        with transaction.atomic():
            AgentLease.objects.create(
                agent=agent, holder=holder, acquired_at=when, heartbeat_at=when, expires_at=when + _ttl()
            )
        return LeaseResult(True)
    except IntegrityError:
        pass
    taken = AgentLease.objects.filter(Q(holder=holder) | Q(expires_at__lt=when), agent=agent).update(
        holder=holder, acquired_at=when, heartbeat_at=when, expires_at=when + _ttl()
    )
    if taken == 1:
        return LeaseResult(True, "took over an expired lease")
    lease = AgentLease.objects.filter(agent=agent).first()
    if lease is None:  # released between our insert and update: try once more
        return lease_acquire(agent=agent, holder=holder)
    return LeaseResult(
        acquired=False,
        holder=lease.holder,
        message=f"agent {agent.name} is driven by gateway {lease.holder} (last heartbeat "
        f"{lease.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC, lease valid until {lease.expires_at:%H:%M:%S}); "
        "stop that gateway, or wait for its lease to expire if it is gone",
    )


def leases_live(*, agent_ids: list[int]) -> dict[int, AgentLease]:
    """The live (not expired) leases of `agent_ids`, by agent id: the agents other gateways drive now."""
    return {
        lease.agent_id: lease
        for lease in AgentLease.objects.filter(agent_id__in=agent_ids, expires_at__gte=now())
    }


def lease_heartbeat(*, holder: str, agent_ids: list[int]) -> set[int]:
    """Renew our leases; returns the agent ids we still hold (a lost one was taken over)."""
    when = now()
    AgentLease.objects.filter(holder=holder, agent_id__in=agent_ids).update(
        heartbeat_at=when, expires_at=when + _ttl()
    )
    return set(
        AgentLease.objects.filter(holder=holder, agent_id__in=agent_ids).values_list("agent_id", flat=True)
    )


def lease_release(*, holder: str, agent_ids: list[int] | None = None) -> int:
    qs = AgentLease.objects.filter(holder=holder)
    if agent_ids is not None:
        qs = qs.filter(agent_id__in=agent_ids)
    deleted, _ = qs.delete()
    return deleted


def agent_stop(*, agent_id: int, reason: str, error: str = "") -> None:
    """Stop an agent until an operator starts it again (clears `stopped` in the admin)."""
    fields: dict = {"stopped": True}
    if error:
        fields.update(last_error=error[:5000], last_error_at=now())
    Agent.objects.filter(pk=agent_id).update(**fields)
    kind = ActivityEvent.Kind.AGENT_ERROR if error else ActivityEvent.Kind.AGENT_OFFLINE
    record_event(kind, agent_id=agent_id, summary=reason)


def agent_offline_unless_held(*, agent_id: int, gateway_id: str, reason: str) -> bool:
    """Record that a gateway stopped driving an agent, unless another gateway drives it by now.

    A gateway that lost the lease, or fenced itself after failing to renew it, says nothing once the
    agent is live elsewhere: its "offline" would contradict the holder's "online" on the dashboard.
    """
    taken = (
        AgentLease.objects.filter(agent_id=agent_id, expires_at__gte=now())
        .exclude(holder=gateway_id)
        .exists()
    )
    if taken:
        return False
    record_event(ActivityEvent.Kind.AGENT_OFFLINE, agent_id=agent_id, summary=reason)
    return True


def phone_refusal(*, agent: Agent, holding: set[int]) -> LeaseResult | None:
    """Why `agent` may not start because another enabled agent runs on its phone, or None.

    One Telegram account runs one persona: of the enabled agents sharing a phone, the one already
    running (anywhere) starts, else the oldest; the others are refused until one is disabled.
    """
    other = phone_sharer_that_runs(agent=agent, holding=holding)
    if other is None:
        return None
    origin = f" ({other.source_file})" if other.source_file else ""
    return LeaseResult(
        acquired=False,
        holder=f"phone:{other.pk}",
        message=f"agent {agent.name} is not started: its phone {agent.phone} is also the phone of enabled "
        f"agent {other.name}{origin}, which runs on that Telegram account; one account runs one persona: "
        f"disable {agent.name} or {other.name}, or give one of them its own phone",
    )


def record_phone_refusal(*, agent_id: int, message: str) -> None:
    """Show a phone refusal where operators look: the agent's last error (admin) and the activity log."""
    Agent.objects.filter(pk=agent_id).update(last_error=message, last_error_at=now())
    record_event(ActivityEvent.Kind.AGENT_ERROR, agent_id=agent_id, summary=message)
