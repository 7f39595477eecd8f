"""Due events fire as turns: the gateway's step for `event` rows, and the "next due" time to sleep until.

An event fires in the transaction that claims it. The claim is a compare-and-set on the row's
(`due_at`, `fired_count`): `UPDATE ... WHERE pk = ? AND due_at = <seen> AND fired_count = <seen>`, then
a check that exactly one row changed. The same transaction starts the turn (`graph_replan` with trigger
`event`). So an occurrence fires once: a gateway that dies before the commit leaves the row as it was
for the next one; one that dies after it has already started the turn and moved the row on; two
gateways racing for it (a takeover) cannot both change the row. A clock jump forward fires the event
once and skips the steps it jumped over; a jump back finds `due_at` already moved on.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction

from agents.models import Agent
from cindy_site.bulk import earliest
from cindy_site.clock import now
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent, Conversation, TaskGraph
from conversations.services.activity import record_event
from conversations.services.graphs import graph_replan
from engine.triggers import quiet_reason
from memory.models import ScheduledEvent
from memory.schedule_times import event_next_due

logger = logging.getLogger(__name__)

#: Events fired per step at most; the rest fire on the next pass.
MAX_EVENTS_PER_STEP = 100


def events_fire_due(*, agent_ids: Iterable[int], at: dt.datetime | None = None) -> int:
    """Claim and fire the due events of `agent_ids`; returns how many fired (each in its own transaction)."""
    when = at or now()
    ids = list(agent_ids)
    if not ids:
        return 0
    due = list(
        ScheduledEvent.objects.filter(agent_id__in_ids=Ids(ids), due_at__lte=when)
        .order_by("due_at", "pk")
        .values_list("pk", flat=True)[:MAX_EVENTS_PER_STEP]
    )
    return sum(1 for pk in due if event_fire(event_pk=pk, at=when))


def event_fire(*, event_pk: int, at: dt.datetime) -> bool:
    """Fire one due event if this caller wins its claim. Returns whether it fired.

    1. Read the row; stop if it is no longer due.
    2. Compare-and-set, only if `due_at` and `fired_count` are still what was read: move `due_at` to
       the next step and count the firing, or delete the event after its last occurrence.
    3. In the same transaction, start the turn in the event's conversation (none when the
       conversation is gone or quiet: the occurrence is spent and recorded as skipped).
    """
    with transaction.atomic():
        event = ScheduledEvent.objects.select_related("agent").filter(pk=event_pk).first()
        if event is None or event.due_at is None or event.due_at > at:
            return False
        if not event_claim(event=event, at=at):
            return False
        # An event made in a forum topic fires in that topic.
        conversation = Conversation.objects.filter(
            agent_id=event.agent_id, peer_id=event.channel_id, topic_id=event.topic_id
        ).first()
        reason = _skip_reason(event.agent, conversation)
        if reason:
            record_event(
                ActivityEvent.Kind.INFO,
                agent_id=event.agent_id,
                conversation_id=conversation.pk if conversation else None,
                summary=f"event {event.entry_id} came due but did not fire: {reason}",
                data={"event": event.entry_id, "reason": reason},
            )
            return True
        graph_replan(
            conversation=conversation,
            trigger=TaskGraph.Trigger.EVENT,
            target_message_id=None,
            context={
                "event": {
                    "id": event.entry_id,
                    "intent": event.intent,
                    "due": event.due_at.isoformat(),
                    "occurrence": event.fired_count + 1,
                }
            },
        )
        record_event(
            ActivityEvent.Kind.TRIGGER,
            agent_id=event.agent_id,
            conversation_id=conversation.pk,
            summary=f"event {event.entry_id} fired: {event.intent[:200]}",
            data={"trigger": "event", "event": event.entry_id, "occurrence": event.fired_count + 1},
        )
    return True


def event_claim(*, event: ScheduledEvent, at: dt.datetime) -> bool:
    """The compare-and-set on the occurrence `event` was read at; True when this caller won it."""
    following = event_next_due(event, after=at)
    claim = ScheduledEvent.objects.filter(pk=event.pk, due_at=event.due_at, fired_count=event.fired_count)
    if following is None:
        won, _ = claim.delete()
    else:
        won = claim.update(due_at=following, fired_count=event.fired_count + 1, last_fired=at)
    return won == 1


def _skip_reason(agent: Agent, conversation: Conversation | None) -> str:
    if conversation is None:
        return "the agent has no such conversation any more"
    return quiet_reason(agent=agent, conversation=conversation) or _rate_limit_reason(agent)


def _rate_limit_reason(agent: Agent) -> str:
    """CINDY_EVENTS_PER_HOUR: the events that fired for this agent in the last hour (their trigger
    entries in the activity log) bound the next one."""
    limit = settings.CINDY_EVENTS_PER_HOUR
    fired = ActivityEvent.objects.filter(
        agent=agent,
        kind=ActivityEvent.Kind.TRIGGER,
        created__gte=now() - dt.timedelta(hours=1),
        data__trigger="event",
    ).count()
    if fired < limit:
        return ""
    return f"agent {agent.name} had {fired} events fire in the last hour and CINDY_EVENTS_PER_HOUR is {limit}"


def event_next_due_at(*, agent_ids: Iterable[int]) -> dt.datetime | None:
    """The earliest pending event of `agent_ids`: the gateway may sleep until then."""
    return earliest(ScheduledEvent, "due_at", agent_ids=list(agent_ids))
