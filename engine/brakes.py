"""Spend brakes: planning stops, without an LLM call, while a cap or a rate limit is reached.

Checked by the task worker before a turn is planned (`engine.tasks.run_received`), in this order:

1. the installation's daily cap (CINDY_DAILY_SPEND_CAP_USD): today's LLM cost of all agents;
2. the agent's daily cap (`Agent.daily_spend_cap`): today's LLM cost of the agent;
3. the agent's turns per partner per minute and per day (`Agent.partner_turns_per_minute`,
   `partner_turns_per_day`): planning turns that called the LLM in this conversation in the last
   60 s, or today.

"Today" starts at midnight in TIME_ZONE. A braked turn goes back to pending without counting an
attempt and without a `node_deferred` event, and is looked at again after BRAKE_RECHECK_SECONDS (a
minute limit: when its window frees a turn): so it plans as soon as the day turns, the window moves,
or an operator raises the cap in the admin (saving changed limits looks at the agent's held turns again
at once: `braked_turns_release`). The agent's activity stream says so once per brake, cap
value and day (an `info` event with `data.brake`), and the dashboard lists the agents at a spend cap.
Only planning is braked: media descriptions and translations an operator asks for are not.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from agents.models import Agent
from cindy_site.clock import now
from cindy_site.money import usd
from conversations.models import ActivityEvent, NodeKind, NodeStatus, TaskNode
from conversations.services.activity import record_event
from conversations.services.wake import wake_gateways_on_commit
from llm.models import LLMCall

#: How often a braked turn is looked at again.
BRAKE_RECHECK_SECONDS = 60
#: The param a braked turn carries (the key of the brake that held it last), so that an operator's
#: change of the limits finds it.
BRAKED_PARAM = "braked"
MINUTE = dt.timedelta(seconds=60)


@dataclass(frozen=True)
class Brake:
    #: Identifies the brake, its limit and its day: the activity stream says so once per key.
    key: str
    message: str
    #: When the turn is looked at again.
    until: dt.datetime


def day_start(at: dt.datetime) -> dt.datetime:
    tz = ZoneInfo(settings.TIME_ZONE)
    return dt.datetime.combine(at.astimezone(tz).date(), dt.time(), tzinfo=tz)


def _spent(*, since: dt.datetime, agent_id: int | None = None) -> Decimal:
    calls = LLMCall.objects.filter(created__gte=since)  # llmcall_day_idx
    if agent_id is not None:
        calls = calls.filter(agent_id=agent_id)
    return calls.aggregate(total=Sum("cost"))["total"] or Decimal("0")


def _turn_times(*, conversation_id: int, agent_id: int, since: dt.datetime) -> list[dt.datetime]:
    """When each planning turn of the conversation since `since` first called the LLM."""
    rows = (
        LLMCall.objects.filter(
            created__gte=since,
            agent_id=agent_id,
            conversation_id=conversation_id,
            purpose=LLMCall.Purpose.PLAN,
            node_id__isnull=False,
        )
        .values_list("node_id", "created")
        .order_by("created")
    )
    first: dict[int, dt.datetime] = {}
    for node_id, created in rows:
        first.setdefault(node_id, created)
    return sorted(first.values())


def planning_brake(*, agent: Agent, conversation_id: int, at: dt.datetime | None = None) -> Brake | None:
    """The brake that stops this agent planning in this conversation now, or None."""
    at = at or now()
    today = day_start(at)
    recheck = at + dt.timedelta(seconds=BRAKE_RECHECK_SECONDS)
    day = f"{today:%Y-%m-%d}"
    cap = settings.CINDY_DAILY_SPEND_CAP_USD
    if cap is not None:
        spent = _spent(since=today)
        if spent >= cap:
            return Brake(
                f"installation-day:{day}:{usd(cap)}",
                f"spend cap reached: the installation spent ${usd(spent)} of its ${usd(cap)} today "
                "(CINDY_DAILY_SPEND_CAP_USD); planning resumes tomorrow or when the cap is raised",
                recheck,
            )
    if agent.daily_spend_cap is not None:
        spent = _spent(since=today, agent_id=agent.pk)
        if spent >= agent.daily_spend_cap:
            return Brake(
                f"agent-day:{day}:{usd(agent.daily_spend_cap)}",
                f"spend cap reached: {agent.name} spent ${usd(spent)} of its daily ${usd(agent.daily_spend_cap)}; "
                "planning resumes tomorrow or when the cap is raised (admin: Daily spend cap)",
                recheck,
            )
    per_minute, per_day = agent.partner_turns_per_minute, agent.partner_turns_per_day
    if per_minute or per_day:
        since = today if per_day else at - MINUTE
        turns = _turn_times(conversation_id=conversation_id, agent_id=agent.pk, since=min(since, at - MINUTE))
        if per_day and sum(1 for t in turns if t >= today) >= per_day:
            return Brake(
                f"partner-day:{conversation_id}:{day}:{per_day}",
                f"turn limit reached: {per_day} planning turns in this conversation today; the next "
                "waits for tomorrow or a higher limit (admin: Partner turns per day)",
                recheck,
            )
        recent = [t for t in turns if t > at - MINUTE]
        if per_minute and len(recent) >= per_minute:
            frees = recent[-per_minute] + MINUTE
            return Brake(
                f"partner-minute:{conversation_id}:{day}:{per_minute}",
                f"turn limit reached: {per_minute} planning turn(s) in this conversation within a "
                "minute; the next waits until the minute has passed (admin: Partner turns per minute)",
                min(max(frees, at + dt.timedelta(seconds=1)), recheck),
            )
    return None


def brake_hold(*, node: TaskNode, owner: str) -> str:
    """If a brake stops this `received` node's planning: put it back to pending until the brake's next
    check (no attempt counted, no event), say so once in the agent's activity, and return the
    message. Returns '' when planning may go ahead. `node` is the node as the task read it, with its
    agent (`select_related("agent")`): the hold itself is conditional on the claim."""
    node_id = node.pk
    at = now()
    brake = planning_brake(agent=node.agent, conversation_id=node.conversation_id, at=at)
    if brake is None:
        return ""
    with transaction.atomic():
        held = TaskNode.objects.filter(pk=node_id, status=NodeStatus.RUNNING, lease_owner=owner).update(
            status=NodeStatus.PENDING,
            not_before=brake.until,
            lease_owner="",
            lease_expires_at=None,
            params={**(node.params or {}), BRAKED_PARAM: brake.key},
        )
        if held:
            brake_announce(agent_id=node.agent_id, conversation_id=node.conversation_id, brake=brake, at=at)
    return brake.message if held else "lost"


def braked_turns_release(*, agent_id: int) -> int:
    """Look at the agent's braked turns again now (their next check moves to now) and wake the
    gateways: an operator who raised a cap or a limit sees planning resume at once, not at the brake's
    next check. A turn the new limits still brake is held again. Returns how many turns were released."""
    at = now()
    released = TaskNode.objects.filter(
        agent_id=agent_id,
        kind=NodeKind.RECEIVED,
        status=NodeStatus.PENDING,
        not_before__gt=at,
        params__has_key=BRAKED_PARAM,
    ).update(not_before=at)
    if released:
        wake_gateways_on_commit([agent_id], turn=True)
    return released


def brake_announce(*, agent_id: int, conversation_id: int, brake: Brake, at: dt.datetime) -> bool:
    """Record the brake in the agent's activity unless it was recorded today; returns whether it did.

    The agent's row is locked first, so two workers braking the same agent at once record it once.
    """
    Agent.objects.select_for_update().filter(pk=agent_id).values_list("pk", flat=True).first()
    said = ActivityEvent.objects.filter(
        agent_id=agent_id, kind=ActivityEvent.Kind.INFO, created__gte=day_start(at), data__brake=brake.key
    ).exists()
    if said:
        return False
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent_id,
        conversation_id=conversation_id,
        summary=brake.message,
        data={"brake": brake.key},
    )
    return True


def spend_alerts(*, at: dt.datetime | None = None) -> list[str]:
    """The dashboard's notices: the installation or agents at their daily spend cap (two queries)."""
    at = at or now()
    today = day_start(at)
    alerts = []
    cap = settings.CINDY_DAILY_SPEND_CAP_USD
    spent = dict(
        LLMCall.objects.filter(created__gte=today)
        .values("agent_id")
        .annotate(total=Sum("cost"))
        .order_by()
        .values_list("agent_id", "total")
    )
    total = sum((v or Decimal("0") for v in spent.values()), Decimal("0"))
    if cap is not None and total >= cap:
        alerts.append(
            f"spend cap reached: the installation spent ${usd(total)} of its ${usd(cap)} today "
            "(CINDY_DAILY_SPEND_CAP_USD): no agent plans until tomorrow or until it is raised"
        )
    for name, agent_cap, pk in Agent.objects.filter(daily_spend_cap__isnull=False).values_list(
        "name", "daily_spend_cap", "pk"
    ):
        used = spent.get(pk) or Decimal("0")
        if used >= agent_cap:
            alerts.append(
                f"spend cap reached: {name} spent ${usd(used)} of its daily ${usd(agent_cap)}: it does "
                "not plan until tomorrow or until the cap is raised"
            )
    return alerts
