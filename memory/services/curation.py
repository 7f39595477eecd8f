"""Edits made by people in the admin: memories, plans, summaries, notes and intentions."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from cindy_site import clock
from memory.models import Intention, Memory, Note, Plan, Summary


def memory_validate(*, memory: Memory) -> None:
    if memory.kind == Memory.Kind.CURATED and memory.partner_id is None:
        raise ValidationError(
            {"partner_id": "a curated memory belongs to one partner: give their Telegram user id"}
        )
    if not memory.content.strip():
        raise ValidationError({"content": "a memory needs some content"})


@transaction.atomic
def memory_save(*, memory: Memory) -> Memory:
    """Store a memory written or corrected by a person. A new one is dated now."""
    memory_validate(memory=memory)
    if memory.created is None:
        memory.created = clock.now()
        memory.created_raw = memory.created.isoformat()
    memory.full_clean()
    memory.save()
    return memory


def plan_validate(*, plan: Plan) -> None:
    if not plan.content.strip():
        raise ValidationError({"content": "a plan needs some content"})


@transaction.atomic
def plan_save(*, plan: Plan) -> Plan:
    """Store a channel plan written or corrected by a person."""
    plan_validate(plan=plan)
    return _dated_save(plan)


def _dated_save(row):
    """Date a new row now, check the model's own rules, and save it."""
    if row.created is None:
        row.created = clock.now()
    row.full_clean()
    row.save()
    return row


def entry_validate(*, entry: Summary | Note | Intention) -> None:
    """A summary, note or intention written by a person: content, and a summary's range in order."""
    if not (entry.content or "").strip():
        raise ValidationError({"content": "write some content (delete the row to remove it)"})
    if isinstance(entry, Summary):
        first, last = entry.first_message_id, entry.last_message_id
        if first is not None and last is not None and first > last:
            raise ValidationError(
                {"last_message_id": f"the range ends ({last}) before it starts ({first}): swap them"}
            )
        early, late = entry.first_message_date, entry.last_message_date
        if early and late and early > late:
            raise ValidationError({"last_message_date": "the last message date is before the first"})


@transaction.atomic
def entry_save(*, entry: Summary | Note | Intention) -> Summary | Note | Intention:
    """Store a summary, note or intention added or corrected in the admin (dated now when new)."""
    entry_validate(entry=entry)
    return _dated_save(entry)
