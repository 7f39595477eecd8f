"""The daily planning turn that keeps an agent's schedule filled some days ahead.

Only agents whose persona has a "Daily Schedule" section (and whose account id is known) get one. The
turn runs in the agent's own Saved Messages conversation with trigger `schedule`; the policy lets it
change only the agent's records (`schedule`, `remember`, ...), never send to a chat. Its due time is a
`ScheduleRefresh` row claimed with a compare-and-set on `due_at`, as events are, so it runs once a day
across crashes and takeovers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.db import transaction

from agents.models import Agent
from cindy_site.clock import now
from conversations.models import Conversation, TaskGraph
from conversations.services.graphs import graph_replan
from memory.models import ScheduleEntry, ScheduleRefresh

#: How far ahead the planning turn fills the schedule.
SCHEDULE_DAYS_AHEAD = 2
#: How often the planning turn runs.
REFRESH_INTERVAL = dt.timedelta(hours=24)


def schedule_refresh_due(*, agent_ids: Iterable[int], at: dt.datetime | None = None) -> int:
    """Start the planning turns that are due for `agent_ids`. Returns how many started.

    1. Agents that keep a schedule and have no refresh row get one, due now.
    2. Each due row is claimed by compare-and-set (due_at moves a day on) in the transaction that
       starts its turn.
    """
    when = at or now()
    agents = {
        a.pk: a
        for a in Agent.objects.filter(pk__in=list(agent_ids), telegram_user_id__isnull=False).exclude(
            daily_schedule=""
        )
    }
    if not agents:
        return 0
    have = set(ScheduleRefresh.objects.filter(agent_id__in=agents).values_list("agent_id", flat=True))
    for agent_id in agents.keys() - have:
        ScheduleRefresh.objects.get_or_create(agent_id=agent_id, defaults={"due_at": when})
    started = 0
    for row in ScheduleRefresh.objects.filter(agent_id__in=agents, due_at__lte=when):
        with transaction.atomic():
            won = ScheduleRefresh.objects.filter(pk=row.pk, due_at=row.due_at).update(
                due_at=when + REFRESH_INTERVAL, last_run=when
            )
            if won == 1:
                _start_planning(agents[row.agent_id], at=when)
                started += 1
    return started


def _start_planning(agent: Agent, *, at: dt.datetime) -> TaskGraph:
    conversation, _ = Conversation.objects.get_or_create(
        agent=agent,
        peer_id=agent.telegram_user_id,
        defaults={"kind": Conversation.Kind.DM, "title": "Saved Messages"},
    )
    through = at + dt.timedelta(days=SCHEDULE_DAYS_AHEAD)
    last = ScheduleEntry.objects.filter(agent=agent).order_by("-end").values_list("end", flat=True).first()
    return graph_replan(
        conversation=conversation,
        trigger=TaskGraph.Trigger.SCHEDULE,
        target_message_id=None,
        context={
            "schedule": {
                "through": through.isoformat(),
                "filled_until": last.isoformat() if last else "",
                "days_ahead": SCHEDULE_DAYS_AHEAD,
            }
        },
    )


def schedule_next_due_at(*, agent_ids: Iterable[int]) -> dt.datetime | None:
    return (
        ScheduleRefresh.objects.filter(agent_id__in=list(agent_ids))
        .order_by("due_at")
        .values_list("due_at", flat=True)
        .first()
    )
