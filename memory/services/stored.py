"""The one code path that stores every stored kind's task (see `memory.stored_kinds`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from cindy_site.clock import now
from memory.stored_kinds import StoreContext, StoredKind, stored_kind


@dataclass(frozen=True)
class StoredOutcome:
    kind: str
    entry_id: str
    action: str  # "created", "updated", "deleted" or "absent" (a delete of an id that does not exist)

    def describe(self) -> str:
        return f"{self.kind} {self.entry_id} {self.action}"

    @classmethod
    def from_text(cls, text: str) -> StoredOutcome:
        """The outcome `describe()` wrote (a node's stored result keeps those lines)."""
        kind, _, rest = text.partition(" ")
        entry_id, _, action = rest.rpartition(" ")
        return cls(kind=kind, entry_id=entry_id, action=action)


def outcomes_summary(outcomes: Iterable[StoredOutcome]) -> str:
    """What a turn stored, counted per kind for the activity line: one entry by its id
    ("note note-1a2b created"), several by their number ("21 schedule entries", "3 remember entries
    (2 created, 1 deleted)"), kinds in the order the turn gave them; "" for none."""
    by_kind: dict[str, list[StoredOutcome]] = {}
    for outcome in outcomes:
        by_kind.setdefault(outcome.kind, []).append(outcome)
    parts = []
    for kind, items in by_kind.items():
        if len(items) == 1:
            parts.append(items[0].describe())
            continue
        actions: dict[str, int] = {}
        for item in items:
            actions[item.action] = actions.get(item.action, 0) + 1
        counted = f"{len(items)} {kind} entries"
        if set(actions) != {"created"}:
            counted += " (" + ", ".join(f"{n} {action}" for action, n in actions.items()) + ")"
        parts.append(counted)
    return ", ".join(parts)


def parse_created(raw: str) -> dt.datetime | None:
    """A `created` value as a datetime: ISO 8601 date or date-time, or "YYYY-MM-DD HH:MM:SS UTC".

    Naive values are UTC. None when the text is none of these (the text itself is still kept).
    """
    text = raw.strip()
    if text.endswith((" UTC", " GMT")):
        text = text[:-4].rstrip()
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def stored_entry_apply(
    *,
    kind: str,
    context: StoreContext,
    entry_id: str | None,
    content: str,
    created: str | None = None,
    params: dict[str, Any] | None = None,
) -> StoredOutcome:
    """Create, update or delete one entry of a stored kind.

    1. Without an id, the entry gets a new one (`<prefix>-<8 hex>`), so it is created.
    2. Empty content deletes the entries with that id in the kind's scope ("absent" if none).
    3. An existing id updates content, the declared extra fields and `created` (only when given):
       fields set at creation (e.g. the channel a memory came from) are kept.
    4. A new id creates the entry in the kind's scope, dated `created` or now.
    """
    spec = stored_kind(kind)
    if spec is None:
        raise ValueError(f'"{kind}" is not a stored kind')
    entry_id = (entry_id or "").strip() or spec.new_id()
    with transaction.atomic():
        rows = spec.model.objects.filter(**spec.scope(context), **{spec.id_field: entry_id})
        text = (content or "").strip()
        if not text:
            deleted, _ = rows.delete()
            return StoredOutcome(kind, entry_id, "deleted" if deleted else "absent")
        values = {spec.content_field: text, **_mapped_params(spec, params or {})}
        if created:
            values.update(_created_values(spec, created))
        existing = list(rows.order_by("pk"))
        if existing:
            for row in existing:
                for name, value in values.items():
                    setattr(row, name, value)
                row.save()
            return StoredOutcome(kind, entry_id, "updated")
        if spec.created_field not in values:
            values[spec.created_field] = now()
        spec.model.objects.create(
            **spec.scope(context), **spec.on_create(context), **{spec.id_field: entry_id}, **values
        )
    return StoredOutcome(kind, entry_id, "created")


def _mapped_params(spec: StoredKind, params: dict[str, Any]) -> dict[str, Any]:
    """The declared fields the task gave. A date that does not parse is left out (the old value stays)."""
    values: dict[str, Any] = {}
    for param in spec.params:
        value = params.get(param.name)
        if value is None:
            continue
        if param.type == "date":
            if not isinstance(value, dt.date):
                parsed = parse_created(str(value))
                if parsed is None:
                    continue
                value = parsed.date()
            elif isinstance(value, dt.datetime):
                value = value.date()
        values[param.field] = value
    return values


def _created_values(spec: StoredKind, raw: str) -> dict[str, Any]:
    values: dict[str, Any] = {spec.created_field: parse_created(raw) or now()}
    if spec.created_raw_field:
        values[spec.created_raw_field] = raw.strip()[:64]
    return values


def stored_entries(*, kind: str, context: StoreContext) -> list[dict[str, Any]]:
    """The kind's entries in `context`, as the prompt shows them."""
    return stored_entries_split(kind=kind, context=context, boundary=None)[0]


def stored_entries_split(
    *, kind: str, context: StoreContext, boundary: dt.datetime | None, hide_foreign_ids: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The kind's entries in `context` in two lists, each in the kind's order: those dated at or before
    `boundary` (or undated), and those dated after it. Without a boundary every entry is in the first.

    The date is the kind's `created` field, which an update keeps (unless the task gives a new one).
    `hide_foreign_ids` (a prompt for the conversation `context.channel_id`): entries of a shared kind
    that another conversation created are shown without their id, since this one may not change them.
    """
    spec = stored_kind(kind)
    if spec is None:
        return [], []
    rows = spec.model.objects.filter(**spec.scope(context)).order_by(*spec.ordering)
    older: list[dict[str, Any]] = []
    newer: list[dict[str, Any]] = []
    for row in rows:
        created = getattr(row, spec.created_field)
        target = newer if boundary is not None and created is not None and created > boundary else older
        entry = spec.section_entry(row)
        if hide_foreign_ids and not spec.entry_owned_by(row, context.channel_id):
            entry = {k: v for k, v in entry.items() if k != "id"}
        target.append(entry)
    return older, newer


def stored_entry_foreign(*, kind: str, context: StoreContext, entry_id: str) -> str:
    """Why the conversation of `context` may not change the entry `entry_id` of a shared kind (one
    another conversation created), or "" when it may (its own entry, a new id, a per-chat kind)."""
    spec = stored_kind(kind)
    if spec is None or not spec.owner_field or not entry_id:
        return ""
    rows = spec.model.objects.filter(**spec.scope(context), **{spec.id_field: entry_id})
    foreign = rows.exclude(**{spec.owner_field: context.channel_id}).exists()
    if not foreign:
        return ""
    return (
        f"{kind} {entry_id} was stored in another conversation: a chat may change or delete only its own "
        "entries (unless its partner is an operator, CINDY_OPERATOR_IDS)"
    )
