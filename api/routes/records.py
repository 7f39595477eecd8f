"""Stored records: memories, notes, plans, intentions, summaries, events and the schedule.

`/agents/{agent_id}/records/KIND` lists and creates, `/agents/{agent_id}/records/KIND/{entry_id}`
reads, updates and deletes, for each kind its own operations, so that the schema says exactly what
each handler requires: per-conversation kinds (plans, notes, summaries, events) require `channel_id`
(the conversation's peer id) to create, read, update and delete; the others take it optionally.
Writes go through `api.services.records` (the agent's own validation and store). Permissions are
the model's: view, add, change and delete of the kind's model (e.g. memory.change_note).
"""

from __future__ import annotations

import datetime as dt
import inspect
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import StrictInt

from api.core import (
    DEFAULT_LIMIT,
    ERRORS,
    MAX_ID,
    ApiError,
    Limit,
    Offset,
    PeerId,
    RowId,
    page,
    page_schema,
    visible_agent,
)
from api.services.records import (
    RECORD_KINDS,
    RecordError,
    RecordKind,
    record_find,
    record_row,
    record_write,
    records_of,
)

router = Router(tags=["records"])

EntryId = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.:-]+$")]
FieldValue = Annotated[str, Field(max_length=4000)] | Annotated[StrictInt, Field(ge=-(2**62), le=2**62)]


class RecordOut(Schema):
    id: str
    kind: str
    channel_id: int | None = Field(None, description="The conversation's peer id (per-conversation kinds)")
    content: str
    created: dt.datetime | None
    fields: dict[str, Any] = Field(description="The kind's own fields, e.g. an event's time and interval")


#: A peer id in a JSON body: a number, never `true` or `false` (which lax parsing would take as 1 or 0).
BodyPeerId = Annotated[StrictInt, Field(ge=-MAX_ID, le=MAX_ID, description="A Telegram peer id")]


class RecordIn(Schema):
    """A new entry of an agent-wide kind; `channel_id`, when given, ties it to one conversation."""

    content: str = Field(
        min_length=1, max_length=20000, description="The text (an event's intent, an activity's name)"
    )
    channel_id: BodyPeerId | None = Field(None, description="The conversation it came from (optional)")
    id: EntryId | None = Field(None, description="Empty: a new id is made")
    created: str | None = Field(None, max_length=64, description="ISO 8601 date or date-time; empty: now")
    fields: dict[str, FieldValue] = Field(
        default_factory=dict,
        description="summaries: min_message_id, max_message_id, first_message_date, last_message_date; "
        "events: time, timezone, interval, occurrences; schedule: start_time, end_time, description, "
        "responsiveness",
    )


class RecordInChannel(RecordIn):
    """A new entry of a per-conversation kind (plans, notes, summaries, events)."""

    channel_id: BodyPeerId = Field(description="The conversation's peer id")


class RecordUpdate(Schema):
    content: str = Field(min_length=1, max_length=20000)
    created: str | None = Field(None, max_length=64)
    fields: dict[str, FieldValue] = Field(default_factory=dict)


RecordPage = page_schema(RecordOut, "RecordPage")


def _by(request: HttpRequest) -> str:
    return request.user.get_username()


def _write(request: HttpRequest, record: RecordKind, agent_id: int, **values: Any):
    try:
        return record_write(record=record, agent_id=agent_id, by=_by(request), **values)
    except RecordError as exc:
        raise ApiError(422, str(exc), field=exc.field) from None


def _existing(record: RecordKind, agent_id: int, channel_id: int | None, entry_id: str) -> Any:
    if record.per_channel and channel_id is None:
        raise ApiError(
            422,
            f"{record.name} belong to one conversation: add ?channel_id=PEER_ID",
            field="channel_id",
        )
    row = record_find(record, agent_id=agent_id, channel_id=channel_id, entry_id=entry_id)
    if row is None:
        where = f" in channel {channel_id}" if record.per_channel else ""
        raise ApiError(404, f"no {record.name} entry {entry_id}{where}: list them at /records/{record.name}")
    return row


def _signature(view: Any, **params: tuple[Any, Any]) -> Any:
    """Gives `view` the typed signature django-ninja reads its parameters from: `name=(type, default)`,
    `inspect.Parameter.empty` for a required one. Each kind's views are made in a loop, so the types
    (a required or an optional `channel_id`) are set here rather than written in a `def`."""
    empty = inspect.Parameter.empty
    ordered = sorted(params.items(), key=lambda item: item[1][1] is not empty)
    view.__signature__ = inspect.Signature(
        [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=HttpRequest)]
        + [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind, default=default)
            for name, (kind, default) in ordered
        ]
    )
    return view


def _entry_links(record: RecordKind) -> dict[str, Any]:
    """OpenAPI links from a created entry to reading, changing and deleting it: the same agent, the
    id the answer carries and, for a per-conversation kind, its conversation."""
    parameters = {"agent_id": "$request.path.agent_id", "entry_id": "$response.body#/id"}
    if record.per_channel:
        parameters["channel_id"] = "$response.body#/channel_id"
    return {
        f"{action.capitalize()}Entry": {
            "operationId": f"{record.name}_{action}",
            "parameters": parameters,
            "description": f"{action.capitalize()} the {record.name} entry just created",
        }
        for action in ("read", "update", "delete")
    }


def _add_routes(record: RecordKind) -> None:
    """The five operations of one kind, under its own path."""
    base, entry = f"/{{agent_id}}/records/{record.name}", f"/{{agent_id}}/records/{record.name}/{{entry_id}}"
    empty = inspect.Parameter.empty
    #: Reading, changing and deleting an entry of a per-conversation kind needs its conversation.
    entry_channel = (PeerId, empty) if record.per_channel else (PeerId | None, None)
    body = RecordInChannel if record.per_channel else RecordIn
    name = record.name

    def record_list(request, agent_id, channel_id=None, limit=DEFAULT_LIMIT, offset=0):
        agent = visible_agent(request, agent_id, record.perm("view"))
        rows = records_of(record, agent_id=agent.pk, channel_id=channel_id)
        return page(request, rows, limit=limit, offset=offset, row=lambda row: record_row(record, row))

    def record_create(request, agent_id, body):
        agent = visible_agent(request, agent_id, record.perm("add"))
        if body.id and record_find(record, agent_id=agent.pk, channel_id=body.channel_id, entry_id=body.id):
            raise ApiError(
                422, f"{record.name} entry {body.id} exists already: PUT to it to change it", field="id"
            )
        channel_id = body.channel_id if record.per_channel else None
        outcome = _write(
            request,
            record,
            agent.pk,
            channel_id=body.channel_id,
            entry_id=body.id,
            content=body.content,
            created=body.created,
            fields=body.fields,
        )
        return Status(201, record_row(record, _existing(record, agent.pk, channel_id, outcome.entry_id)))

    def record_read(request, agent_id, entry_id, channel_id=None):
        agent = visible_agent(request, agent_id, record.perm("view"))
        return record_row(record, _existing(record, agent.pk, channel_id, entry_id))

    def record_update(request, agent_id, entry_id, body, channel_id=None):
        agent = visible_agent(request, agent_id, record.perm("change"))
        _existing(record, agent.pk, channel_id, entry_id)
        _write(
            request,
            record,
            agent.pk,
            channel_id=channel_id,
            entry_id=entry_id,
            content=body.content,
            created=body.created,
            fields=body.fields,
        )
        return record_row(record, _existing(record, agent.pk, channel_id, entry_id))

    def record_delete(request, agent_id, entry_id, channel_id=None):
        agent = visible_agent(request, agent_id, record.perm("delete"))
        _existing(record, agent.pk, channel_id, entry_id)
        _write(
            request,
            record,
            agent.pk,
            channel_id=channel_id,
            entry_id=entry_id,
            content="",
            created=None,
            fields={},
        )
        return Status(204, None)

    router.get(
        base, response={200: RecordPage, **ERRORS}, summary=f"List {name}", operation_id=f"{name}_list"
    )(
        _signature(
            record_list,
            agent_id=(RowId, empty),
            channel_id=(PeerId | None, None),
            limit=(Limit, DEFAULT_LIMIT),
            offset=(Offset, 0),
        )
    )
    router.post(
        base,
        response={201: RecordOut, **ERRORS},
        summary=f"Create {name}",
        operation_id=f"{name}_create",
        openapi_extra={"responses": {201: {"links": _entry_links(record)}}},
    )(_signature(record_create, agent_id=(RowId, empty), body=(body, empty)))
    router.get(
        entry, response={200: RecordOut, **ERRORS}, summary=f"Read {name}", operation_id=f"{name}_read"
    )(_signature(record_read, agent_id=(RowId, empty), entry_id=(EntryId, empty), channel_id=entry_channel))
    router.put(
        entry, response={200: RecordOut, **ERRORS}, summary=f"Update {name}", operation_id=f"{name}_update"
    )(
        _signature(
            record_update,
            agent_id=(RowId, empty),
            entry_id=(EntryId, empty),
            body=(RecordUpdate, empty),
            channel_id=entry_channel,
        )
    )
    router.delete(
        entry, response={204: None, **ERRORS}, summary=f"Delete {name}", operation_id=f"{name}_delete"
    )(_signature(record_delete, agent_id=(RowId, empty), entry_id=(EntryId, empty), channel_id=entry_channel))


for _record in RECORD_KINDS.values():
    _add_routes(_record)
