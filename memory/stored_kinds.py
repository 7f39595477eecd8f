"""Stored kinds: task kinds that change the agent's own records by id instead of acting on Telegram.

A stored kind is declared once, here, with its model, how task fields map onto the model, which rows
one id is unique among, and how its entries appear in the prompt. Everything else is shared:

- validation of the task (`llm.tasks`): `id` (optional), `content` (empty means delete), `created`
  (optional date or date-time) and the declared extra fields;
- storing it (`memory.services.stored.stored_entry_apply`): a new id creates an entry, an existing id
  updates it, empty content deletes it;
- the prompt (`llm.prompt.sections.stored_sections`): one `# <title>` section of JSON entries, ids
  included, so the agent can name the entry it wants to change; entries written since the history's
  first message follow the history (`prompt_place`), so that writing one keeps the cached prefix.

Adding a kind (`note`, `intend`, `summarize`, `event`, `schedule`, ...) means one more `register(...)`
call with its model and its prompt section; the engine and the parser need no change. Channels are
Telegram peer ids (`StoreContext.channel_id`, with `topic_id` for a forum topic), so this module does
not depend on `conversations`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models

from memory.models import Intention, Memory, Note, Plan, ScheduledEvent, ScheduleEntry, Summary, new_entry_id


@dataclass(frozen=True)
class StoreContext:
    """Where a stored task was asked for: the agent, and the conversation's peer id and name."""

    agent_id: int
    channel_id: int
    channel_name: str = ""
    channel_username: str = ""  # "@name", as the original writes creation_channel_username
    topic_id: int = 0  # in a forum group: the topic (its own plans, notes, summaries and events)


@dataclass(frozen=True)
class StoredParam:
    """An extra task field of a stored kind: the task's `name`, the model's `field`, and its type."""

    name: str
    field: str
    type: str = "text"  # "text", "int" or "date" (text in the task, a date in the model)


@dataclass(frozen=True)
class StoredKind:
    kind: str  # the task kind, e.g. "remember"
    model: type[models.Model]
    id_prefix: str  # ids made for tasks without one: "<id_prefix>-<8 hex digits>"
    scope: Callable[[StoreContext], dict[str, Any]]  # the rows one id is unique among (filter = create)
    section_title: str  # the prompt section: "# <section_title>" then the entries as JSON
    section_entry: Callable[[Any], dict[str, Any]]  # one row as the prompt shows it
    id_field: str = "entry_id"
    content_field: str = "content"
    created_field: str = "created"
    created_raw_field: str | None = None  # keeps a `created` value exactly as the task gave it
    on_create: Callable[[StoreContext], dict[str, Any]] = lambda context: {}  # fields set once
    params: tuple[StoredParam, ...] = ()
    ordering: tuple[str, ...] = ("created", "id")
    section_order: int = 100  # where its prompt section goes among the stored kinds' (lowest first)
    # The original system's state files (memory.services.state_io): the entries' property name in
    # `<agent>/memory.json` (per agent) or `<agent>/memory/<channel id>.json` (per channel); "" = none.
    file_property: str = ""
    per_channel: bool = False
    content_names: tuple[str, ...] = ("content", "text")  # the task fields that carry the content
    in_prompt: bool = True  # False: entries are fetched on demand (e.g. `file:schedule.json`)
    # Where the entries sit in a planning request (llm.prompt.builder, "Prompt order" in docs/llm.md):
    # "split": entries dated up to the history's first message in the system instruction, newer ones
    # after the history, so writing one keeps the cached prefix; "system": all in the system
    # instruction (summaries, which change only together with the history start).
    prompt_place: str = "split"
    # For kinds shared by all of the agent's chats: the column holding the peer id of the conversation
    # that created an entry. Only that conversation (or an operator's) may change or delete the entry,
    # and other chats see it without its id (`entry_owned_by`). "" for per-conversation kinds.
    owner_field: str = ""
    # The prompt budget for stored entries (`memory.services.stored_prompt`): whether it limits this
    # kind, and the column that says how recently the agent used an entry (the most recent are kept).
    budgeted: bool = True
    recency_field: str = "created"
    # The columns a prompt reads of each row (what `section_entry`, `owner_field`, `ordering` and the
    # split need), so a turn skips the rest; empty: every column.
    prompt_fields: tuple[str, ...] = ()
    # Whether a consolidation turn (a quiet chat reviewed into notes and memories) may write the kind.
    in_consolidation: bool = True

    def new_id(self) -> str:
        return new_entry_id(self.id_prefix)

    def entry_owned_by(self, row: Any, channel_id: int) -> bool:
        """Whether the conversation `channel_id` may change `row` (always, for a per-channel kind)."""
        if not self.owner_field:
            return True
        return getattr(row, self.owner_field) == channel_id


_REGISTRY: dict[str, StoredKind] = {}


def register(spec: StoredKind) -> StoredKind:
    """Declare a stored kind. Registration order is the order of their prompt sections."""
    _REGISTRY[spec.kind] = spec
    return spec


def stored_kind(kind: str) -> StoredKind | None:
    return _REGISTRY.get(kind)


def stored_kinds() -> tuple[StoredKind, ...]:
    """The registered kinds in prompt order: by `section_order`, then in registration order."""
    return tuple(sorted(_REGISTRY.values(), key=lambda spec: spec.section_order))


def is_stored_kind(kind: str) -> bool:
    return kind in _REGISTRY


def _created_text(value: dt.datetime | None, raw: str = "") -> str:
    if raw:
        return raw
    return value.strftime("%Y-%m-%d %H:%M:%S %Z") if value else ""


def _memory_entry(memory: Memory) -> dict[str, Any]:
    item: dict[str, Any] = {"id": memory.entry_id, "content": memory.content}
    created = _created_text(memory.created, memory.created_raw)
    if created:
        item["created"] = created
    if memory.creation_channel:
        item["creation_channel"] = memory.creation_channel
    return item


def _plan_entry(plan: Plan) -> dict[str, Any]:
    return {"id": plan.plan_id, "content": plan.content, "created": plan.created.isoformat()}


#: `remember`: the agent's global (episodic) memories, one list per agent across all its chats.
REMEMBER = register(
    StoredKind(
        kind="remember",
        model=Memory,
        id_prefix="memory",
        scope=lambda context: {"agent_id": context.agent_id, "kind": Memory.Kind.EPISODIC},
        on_create=lambda context: {
            "creation_channel": context.channel_name[:255],
            "creation_channel_id": context.channel_id,
            **(
                {"extra": {"creation_channel_username": context.channel_username}}
                if context.channel_username
                else {}
            ),
        },
        created_raw_field="created_raw",
        section_title="Global Memories",
        section_entry=_memory_entry,
        owner_field="creation_channel_id",
        ordering=("position", "id"),
        recency_field="updated",  # set on every change, and never empty (`created` may be)
        prompt_fields=(
            "id",
            "entry_id",
            "content",
            "created",
            "created_raw",
            "creation_channel",
            "creation_channel_id",
            "position",
        ),
        section_order=10,
        file_property="memory",
    )
)

#: `plan`: the agent's plans for one conversation.
PLAN = register(
    StoredKind(
        kind="plan",
        model=Plan,
        id_prefix="plan",
        id_field="plan_id",
        scope=lambda context: {
            "agent_id": context.agent_id,
            "channel_id": context.channel_id,
            "topic_id": context.topic_id,
        },
        section_title="Channel Plan",
        section_entry=_plan_entry,
        section_order=30,
        file_property="plan",
        per_channel=True,
    )
)


# --- Memory that lasts: notes, intentions and conversation summaries --------------------------------


def _note_entry(note: Note) -> dict[str, Any]:
    return {"id": note.entry_id, "content": note.content, "created": note.created.isoformat()}


def _intention_entry(intention: Intention) -> dict[str, Any]:
    return {"id": intention.entry_id, "content": intention.content, "created": intention.created.isoformat()}


def summary_entry(summary: Summary) -> dict[str, Any]:
    """A summary as the prompt (and the exported file) shows it, in the original system's fields."""
    item: dict[str, Any] = {"id": summary.entry_id, "content": summary.content}
    for name, value in (
        ("min_message_id", summary.first_message_id),
        ("max_message_id", summary.last_message_id),
        ("first_message_date", summary.first_message_date),
        ("last_message_date", summary.last_message_date),
    ):
        if value is not None:
            item[name] = value.isoformat() if isinstance(value, dt.date) else value
    return item


#: `note`: what the agent keeps about one conversation, shown beside its memories.
NOTE = register(
    StoredKind(
        kind="note",
        model=Note,
        id_prefix="note",
        scope=lambda context: {
            "agent_id": context.agent_id,
            "channel_id": context.channel_id,
            "topic_id": context.topic_id,
        },
        section_title="Conversation Notes",
        section_entry=_note_entry,
        section_order=20,
        file_property="note",
        per_channel=True,
    )
)

#: `intend`: the agent's standing goals, across all its chats; shown after the channel plan.
INTEND = register(
    StoredKind(
        kind="intend",
        model=Intention,
        id_prefix="intent",
        scope=lambda context: {"agent_id": context.agent_id, "kind": Intention.Kind.INTEND},
        on_create=lambda context: {"creation_channel_id": context.channel_id},
        owner_field="creation_channel_id",
        section_title="Intentions",
        section_entry=_intention_entry,
        section_order=40,
        file_property="intention",
    )
)

#: `summarize`: summaries of past stretches of one conversation. Their section is the last of the
#: system instruction, right before the history, which starts after the last summarized message.
SUMMARIZE = register(
    StoredKind(
        kind="summarize",
        model=Summary,
        id_prefix="summary",
        scope=lambda context: {
            "agent_id": context.agent_id,
            "channel_id": context.channel_id,
            "topic_id": context.topic_id,
        },
        params=(
            StoredParam("min_message_id", "first_message_id", "int"),
            StoredParam("max_message_id", "last_message_id", "int"),
            StoredParam("first_message_date", "first_message_date", "date"),
            StoredParam("last_message_date", "last_message_date", "date"),
        ),
        section_title="Conversation Summary",
        section_entry=summary_entry,
        ordering=("first_message_id", "created", "id"),
        section_order=900,
        file_property="summary",
        per_channel=True,
        prompt_place="system",
        # Consolidation keeps them few, and the history starts where they end: all of them are shown.
        budgeted=False,
        # Summaries move where the history starts: only summarization turns write them.
        in_consolidation=False,
    )
)


# --- Initiative kinds: events and the daily schedule -----------------------------------------------


def _event_entry(event: ScheduledEvent) -> dict[str, Any]:
    item: dict[str, Any] = {"id": event.entry_id, "intent": event.intent, "time": event.time_raw}
    if event.due_at:
        item["next"] = event.due_at.isoformat()
    for name, value in (
        ("timezone", event.timezone),
        ("interval", event.interval_raw),
        ("occurrences", event.occurrences),
    ):
        if value:
            item[name] = value
    return item


def schedule_entry_json(entry: ScheduleEntry) -> dict[str, Any]:
    """One schedule entry in the original's `schedule.json` activity form."""
    return {
        "id": entry.entry_id,
        "start_time": entry.start.isoformat(),
        "end_time": entry.end.isoformat(),
        "activity_name": entry.activity,
        "responsiveness": entry.responsiveness,
        "description": entry.description,
    }


#: `event`: a scheduled intent for this conversation (`engine.events` fires it as a turn).
EVENT = register(
    StoredKind(
        kind="event",
        model=ScheduledEvent,
        id_prefix="event",
        scope=lambda context: {
            "agent_id": context.agent_id,
            "channel_id": context.channel_id,
            "topic_id": context.topic_id,
        },
        section_title="Scheduled Events",
        section_entry=_event_entry,
        content_field="intent",
        content_names=("intent", "content"),
        params=(
            StoredParam("time", "time_raw"),
            StoredParam("timezone", "timezone"),
            StoredParam("interval", "interval_raw"),
            StoredParam("occurrences", "occurrences", "int"),
        ),
        ordering=("due_at", "id"),
    )
)

#: `schedule`: one activity of the agent's daily schedule (shown through `file:schedule.json`).
SCHEDULE = register(
    StoredKind(
        kind="schedule",
        model=ScheduleEntry,
        id_prefix="act",
        scope=lambda context: {"agent_id": context.agent_id},
        section_title="Schedule",
        section_entry=schedule_entry_json,
        content_field="activity",
        content_names=("activity_name", "activity"),
        params=(
            StoredParam("start_time", "start"),
            StoredParam("end_time", "end"),
            StoredParam("description", "description"),
            StoredParam("responsiveness", "responsiveness", "int"),
        ),
        ordering=("start", "id"),
        in_prompt=False,
    )
)
