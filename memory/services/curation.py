"""Edits made by people in the admin: memories and plans."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from cindy_site import clock
from memory.models import Memory, Plan


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
    if plan.created is None:
        plan.created = clock.now()
    plan.full_clean()
    plan.save()
    return plan
