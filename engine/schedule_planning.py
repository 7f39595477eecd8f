"""The daily planning turn that keeps an agent's schedule filled some days ahead.

Only agents whose persona has a "Daily Schedule" section (and whose account id is known) get one. The
turn runs in the agent's own Saved Messages conversation with trigger `schedule`; the policy lets it
change only the agent's records (`schedule`, `remember`, ...), never send to a chat. Its due time is a
`ScheduleRefresh` row claimed with a compare-and-set on `due_at`, as events are, so it runs once a day
across crashes and takeovers.

A turn that fails on configuration the operator can fix (no API key yet, an unknown model name) does
not wait a day: its next try is brought forward (CONFIG_RETRY_FIRST, doubling while it keeps failing,
up to CONFIG_RETRY_MAX). A missing key fails before any request is sent, so these tries cost nothing,
and the first one after the key is added (and the gateway restarted) fills the schedule; its graph
then replaces the failed one on the dashboard.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.db import transaction

from agents.models import Agent
from cindy_site.bulk import earliest
from cindy_site.clock import now
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent, Conversation, TaskGraph, TaskNode
from conversations.services.activity import record_event
from conversations.services.graphs import graph_replan
from memory.models import ScheduleEntry, ScheduleRefresh

#: How far ahead the planning turn fills the schedule.
SCHEDULE_DAYS_AHEAD = 2
#: How often the planning turn runs.
REFRESH_INTERVAL = dt.timedelta(hours=24)
#: After a planning turn failed on configuration: the first try again, and the longest wait between tries.
CONFIG_RETRY_FIRST = dt.timedelta(minutes=5)
CONFIG_RETRY_MAX = dt.timedelta(hours=1)


def schedule_refresh_due(*, agents: Iterable[Agent], at: dt.datetime | None = None) -> int:
    """Start the planning turns that are due for `agents` (the gateway's held agents, which its lease
    step keeps current: no agent row is read again). Returns how many started.

    1. Agents that keep a schedule and have no refresh row get one, due now.
    2. Each due row is claimed by compare-and-set (due_at moves a day on) in the transaction that
       starts its turn.
    """
    when = at or now()
    keeping = {a.pk: a for a in agents if a.telegram_user_id is not None and a.daily_schedule != ""}
    if not keeping:
        return 0
    have = set(
        ScheduleRefresh.objects.filter(agent_id__in_ids=Ids(keeping)).values_list("agent_id", flat=True)
    )
    for agent_id in keeping.keys() - have:
        ScheduleRefresh.objects.get_or_create(agent_id=agent_id, defaults={"due_at": when})
    started = 0
    for row in ScheduleRefresh.objects.filter(agent_id__in_ids=Ids(keeping), due_at__lte=when):
        with transaction.atomic():
            won = ScheduleRefresh.objects.filter(pk=row.pk, due_at=row.due_at).update(
                due_at=when + REFRESH_INTERVAL, last_run=when
            )
            if won == 1:
                _start_planning(keeping[row.agent_id], at=when)
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


def schedule_retry_after_config_error(*, node_id: int, at: dt.datetime | None = None) -> dt.datetime | None:
    """Bring the agent's next planning turn forward after `node_id`, a planning turn, failed on
    configuration. Returns the new due time, or None when the node is not a planning turn.

    1. Count the agent's planning turns that failed in a row, newest first.
    2. The next try is due CONFIG_RETRY_FIRST after the first failure, doubling with each failure up to
       CONFIG_RETRY_MAX (never later than the row's daily due time).
    3. An `info` event tells the operator when it tries again.
    """
    when = at or now()
    node = TaskNode.objects.select_related("graph").filter(pk=node_id).first()
    if node is None or node.graph.trigger != TaskGraph.Trigger.SCHEDULE:
        return None
    recent = TaskGraph.objects.filter(
        conversation__agent_id=node.agent_id, trigger=TaskGraph.Trigger.SCHEDULE
    ).order_by("-id")
    failures = 0
    for status in recent.values_list("status", flat=True)[:8]:
        if status != TaskGraph.Status.FAILED:
            break
        failures += 1
    delay = min(CONFIG_RETRY_MAX, CONFIG_RETRY_FIRST * 2 ** max(0, failures - 1))
    due = when + delay
    ScheduleRefresh.objects.filter(agent_id=node.agent_id, due_at__gt=due).update(due_at=due)
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=node.agent_id,
        conversation_id=node.conversation_id,
        node_id=node.pk,
        summary=(
            f"schedule planning failed on configuration; it tries again in {int(delay.total_seconds() // 60)}"
            f" min (at {due:%Y-%m-%d %H:%M %Z}) once the error above is fixed"
        ),
        data={"schedule_retry_at": due.isoformat()},
    )
    return due


def schedule_next_due_at(*, agent_ids: Iterable[int]) -> dt.datetime | None:
    """The earliest schedule refresh of `agent_ids`: the gateway may sleep until then."""
    return earliest(ScheduleRefresh, "due_at", agent_ids=list(agent_ids))
