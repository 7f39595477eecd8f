"""Agent leases: one account, one connection.

A gateway drives an agent only while it holds the agent's `AgentLease` row. Taking it is a
compare-and-set (insert, or update where the holder is us or the lease has expired); a live lease
held by another gateway is refused. The holder renews it with a heartbeat and deletes it on exit.

A gateway killed without a chance to delete its leases (SIGKILL, a crash, the OOM killer) leaves them
live until they expire. When the holder was a process on this host (its id names this host, see
`default_gateway_id`) and that process no longer exists, the lease is taken over at once, so that a
supervisor's immediate restart drives the agents again without waiting for the lease to run out.
A holder on another host, or a process that still exists, is waited for (the gateway stands by).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from agents.models import Agent, AgentLease
from agents.selectors import phone_sharer_that_runs
from cindy_site.clock import now
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent
from conversations.services.activity import record_event

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseResult:
    acquired: bool
    message: str = ""
    holder: str = ""  # who holds it, when refused


def _ttl() -> dt.timedelta:
    return dt.timedelta(seconds=settings.CINDY_LEASE_SECONDS)


def this_host() -> str:
    """The host part of this machine's gateway ids (`engine.gateway.default_gateway_id`)."""
    return settings.CINDY_GATEWAY_NAME or socket.gethostname()


def _process_exists(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    try:  # a killed process its parent has not reaped yet is gone too (Linux)
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" not in status


def holder_is_gone(holder: str) -> bool:
    """Whether `holder` (a gateway id, HOST:PID:TOKEN) was a process on this host that no longer exists.

    False whenever that cannot be known: another host's gateway, or an id of another shape. Gateways
    on different hosts must therefore have different names (`CINDY_GATEWAY_NAME`, the host name by
    default), and so must gateways in separate process namespaces (containers) on one host."""
    host, _, rest = holder.rpartition(":")
    host, _, pid_text = host.rpartition(":")
    if not rest or not host or host != this_host() or not pid_text.isdigit():
        return False
    return not _process_exists(int(pid_text))


def lease_acquire(*, agent: Agent, holder: str) -> LeaseResult:
    """Take the agent's lease if it is free, ours, expired, or held by a process of this host that no
    longer exists; otherwise say who holds it."""
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
    if holder_is_gone(lease.holder):
        # The same compare-and-set, on the dead holder's name: of two gateways restarted at once,
        # one takes it.
        taken = AgentLease.objects.filter(agent=agent, holder=lease.holder).update(
            holder=holder, acquired_at=when, heartbeat_at=when, expires_at=when + _ttl()
        )
        if taken == 1:
            message = f"took over the lease of gateway {lease.holder}, whose process no longer exists"
            logger.warning("agent %s: %s", agent.name, message)
            return LeaseResult(True, message)
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
        for lease in AgentLease.objects.filter(agent_id__in_ids=Ids(agent_ids), expires_at__gte=now())
    }


def lease_heartbeat(*, holder: str, agent_ids: list[int]) -> set[int]:
    """Renew our leases; returns the agent ids we still hold (a lost one was taken over)."""
    when = now()
    AgentLease.objects.filter(holder=holder, agent_id__in_ids=Ids(agent_ids)).update(
        heartbeat_at=when, expires_at=when + _ttl()
    )
    return set(
        AgentLease.objects.filter(holder=holder, agent_id__in_ids=Ids(agent_ids)).values_list(
            "agent_id", flat=True
        )
    )


def lease_release(*, holder: str, agent_ids: list[int] | None = None) -> int:
    qs = AgentLease.objects.filter(holder=holder)
    if agent_ids is not None:
        qs = qs.filter(agent_id__in_ids=Ids(agent_ids))
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
