"""Stored records (memories, notes, plans, intentions, summaries, events, schedule) written through the
API: the same validation as the agent's own tasks (`llm.tasks.validate_task`) and the same store
(`memory.services.stored.stored_entry_apply`), plus an activity entry naming the person.

Each record kind of the API is one stored kind (`memory.stored_kinds`). Kinds kept per conversation
(plans, notes, summaries, events) are addressed with the conversation's Telegram peer id
(`channel_id`); the others are the agent's across all its chats, and an entry the API makes there
without a `channel_id` belongs to no chat (so no conversation may change it; operators may).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction

from agents.models import Agent
from conversations.models import ActivityEvent, Conversation
from conversations.services.activity import record_event
from llm.policy_initiative import initiative_refusal
from llm.tasks import Task, TaskError, validate_task
from memory.models import ScheduleEntry
from memory.schedule_times import TimeError, parse_entry_time
from memory.services.schedule import clash_label, schedule_clash
from memory.services.stored import StoredOutcome, stored_entry_apply
from memory.stored_kinds import StoreContext, StoredKind, stored_kind


class RecordError(ValueError):
    """A record the store refuses; `field` names the request field at fault when there is one."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class RecordKind:
    name: str  # the API's name, e.g. "memories"
    kind: str  # the stored kind, e.g. "remember"

    @property
    def spec(self) -> StoredKind:
        spec = stored_kind(self.kind)
        assert spec is not None, self.kind
        return spec

    @property
    def per_channel(self) -> bool:
        """Whether one conversation's entries are apart from another's (the scope names the channel)."""
        return "channel_id" in self.spec.scope(StoreContext(agent_id=0, channel_id=0))

    def perm(self, action: str) -> str:
        meta = self.spec.model._meta
        return f"{meta.app_label}.{action}_{meta.model_name}"

    def param_names(self) -> list[str]:
        return [param.name for param in self.spec.params]


RECORD_KINDS: dict[str, RecordKind] = {
    kind.name: kind
    for kind in (
        RecordKind("memories", "remember"),
        RecordKind("notes", "note"),
        RecordKind("plans", "plan"),
        RecordKind("intentions", "intend"),
        RecordKind("summaries", "summarize"),
        RecordKind("events", "event"),
        RecordKind("schedule", "schedule"),
    )
}


def record_scope(record: RecordKind, *, agent_id: int, channel_id: int | None) -> dict[str, Any]:
    """The rows of the kind: the agent's, narrowed to one conversation when `channel_id` is given."""
    scope = record.spec.scope(StoreContext(agent_id=agent_id, channel_id=channel_id or 0))
    if channel_id is None:
        scope.pop("channel_id", None)
    return scope


def records_of(record: RecordKind, *, agent_id: int, channel_id: int | None) -> models.QuerySet:
    spec = record.spec
    rows = spec.model.objects.filter(**record_scope(record, agent_id=agent_id, channel_id=channel_id))
    return rows.order_by(*spec.ordering, "pk")


def record_find(record: RecordKind, *, agent_id: int, channel_id: int | None, entry_id: str) -> Any | None:
    rows = records_of(record, agent_id=agent_id, channel_id=channel_id).filter(
        **{record.spec.id_field: entry_id}
    )
    return rows.first()


def _json(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def record_row(record: RecordKind, row: Any) -> dict[str, Any]:
    spec = record.spec
    created = getattr(row, spec.created_field)
    return {
        "id": getattr(row, spec.id_field),
        "kind": record.name,
        "channel_id": getattr(row, "channel_id", None) if record.per_channel else None,
        "content": getattr(row, spec.content_field),
        "created": created,
        "fields": {param.name: _json(getattr(row, param.field)) for param in spec.params},
    }


def record_write(
    *,
    record: RecordKind,
    agent_id: int,
    channel_id: int | None,
    entry_id: str | None,
    content: str,
    created: str | None,
    fields: dict[str, Any],
    by: str,
) -> StoredOutcome:
    """Create (no or a new `entry_id`), update (an existing one) or delete (empty `content`) one record.

    1. The request is checked as the agent's own task of that kind would be (`validate_task`), and
       events and schedule entries as the admin's forms check them (`_refusal`).
    2. It is stored by `stored_entry_apply`; a time or a range the model refuses undoes it.
    3. The activity stream records who changed what.
    """
    spec = record.spec
    if record.per_channel and channel_id is None:
        raise RecordError(
            f"{record.name} belong to one conversation: give channel_id, the conversation's peer id",
            field="channel_id",
        )
    unknown = sorted(set(fields) - set(record.param_names()))
    if unknown:
        allowed = ", ".join(record.param_names()) or "none"
        raise RecordError(
            f'"{unknown[0]}" is not a field of {record.name}: use {allowed}', field=f"fields.{unknown[0]}"
        )
    raw: dict[str, Any] = {"kind": spec.kind, spec.content_names[0]: content, **fields}
    if entry_id:
        raw["id"] = entry_id
    if created:
        raw["created"] = created
    try:
        (task,) = validate_task(raw)
    except TaskError as exc:
        raise RecordError(str(exc), field=_field_named(str(exc), record)) from None
    refusal = _refusal(record, task, agent_id=agent_id, channel_id=channel_id)
    if refusal:
        raise RecordError(refusal, field=_field_named(refusal, record))
    params = dict(task.params)
    context = StoreContext(agent_id=agent_id, channel_id=channel_id or 0)
    try:
        with transaction.atomic():
            outcome = stored_entry_apply(
                kind=spec.kind,
                context=context,
                entry_id=task.id,
                content=params.pop("content", ""),
                created=params.pop("created", None),
                params=params,
            )
            if outcome.action != "absent":
                _record_activity(record, agent_id=agent_id, outcome=outcome, by=by)
    except (TimeError, OverflowError) as exc:
        # TimeError names the field and the fix; an overflow is a date past what a calendar holds.
        message = str(exc) if isinstance(exc, TimeError) else f"a date or interval is out of range ({exc})"
        raise RecordError(message, field=_field_named(str(exc), record)) from None
    except (IntegrityError, ValidationError) as exc:
        raise RecordError(_integrity_message(record, exc)) from None
    return outcome


def _refusal(record: RecordKind, task: Task, *, agent_id: int, channel_id: int | None) -> str:
    """The rules the admin's forms and the agent's policy keep beyond the task's shape: an event needs a
    readable, future time; a schedule entry ends after it starts and overlaps no other entry."""
    if not task.params.get("content", "").strip():
        return ""  # a delete by id
    agent = Agent.objects.get(pk=agent_id)
    if record.kind == "event":
        refusal = initiative_refusal(task, conversation=Conversation(agent=agent, peer_id=channel_id or 0))
        return refusal.removeprefix("event: ").removeprefix("event ")
    if record.kind == "schedule":
        return _schedule_refusal(task, agent=agent)
    return ""


def _schedule_refusal(task: Task, *, agent: Agent) -> str:
    params = task.params
    existing = ScheduleEntry.objects.filter(agent=agent, entry_id=task.id).first() if task.id else None
    missing = [n for n in ("start_time", "end_time") if existing is None and params.get(n) in (None, "")]
    if missing:
        return " and ".join(f'"{name}"' for name in missing) + " missing: give ISO 8601 date-times"
    try:
        start = parse_entry_time(
            params.get("start_time") or existing.start, agent_timezone=agent.timezone, name="start_time"
        )
        end = parse_entry_time(
            params.get("end_time") or existing.end, agent_timezone=agent.timezone, name="end_time"
        )
    except TimeError as exc:
        return str(exc)
    if end <= start:
        return f'"end_time" ({end:%Y-%m-%d %H:%M}) is not after "start_time" ({start:%Y-%m-%d %H:%M}): give a later end'
    clash = schedule_clash(agent_id=agent.pk, start=start, end=end, entry_id=task.id or "")
    if clash is not None:
        return f"this entry overlaps {clash_label(clash)}: move it, or change or delete that entry first"
    return ""


def _field_named(message: str, record: RecordKind) -> str | None:
    """The field a task error names ("\\"time\\" is ..."), as the request spells it."""
    named = sorted(
        (0 if message.startswith(f"{name} ") else message.find(f'"{name}"'), name)
        for name in record.param_names()
        if message.startswith(f"{name} ") or f'"{name}"' in message
    )
    if named:
        return f"fields.{named[0][1]}"  # the first one the message names
    if any(f'"{name}"' in message for name in record.spec.content_names):
        return "content"
    if '"created"' in message:
        return "created"
    return None


def _integrity_message(record: RecordKind, exc: Exception) -> str:
    if record.name == "schedule":
        return (
            "a schedule entry needs fields.start_time and fields.end_time (ISO 8601), the end after the "
            "start, and responsiveness from 0 to 100"
        )
    if record.name == "events":
        return "an event needs fields.time (ISO 8601 date-time) and a whole number of occurrences"
    return f"{record.name}: the record was refused ({exc}); check its fields"


def _record_activity(record: RecordKind, *, agent_id: int, outcome: StoredOutcome, by: str) -> None:
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=agent_id,
        summary=f"{outcome.describe()} by {by} (API)"[:2000],
        data={"record": record.name, "entry_id": outcome.entry_id, "action": outcome.action, "by": by},
    )
