"""Stored records: memories, notes, plans, intentions, summaries, events and the schedule.

`/agents/{agent_id}/records/{kind}` lists and creates, `/agents/{agent_id}/records/{kind}/{entry_id}`
reads, updates and deletes. Writes go through `api.services.records` (the agent's own validation and
store). Per-conversation kinds take `channel_id` (the conversation's peer id). Permissions are the
model's: view, add, change and delete of the kind's model (e.g. memory.change_note).
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status

from api.core import (
    DEFAULT_LIMIT,
    ERRORS,
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

RecordName = Enum("RecordName", {name: name for name in RECORD_KINDS}, type=str)
EntryId = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.:-]+$")]
FieldValue = Annotated[str, Field(max_length=4000)] | Annotated[int, Field(ge=-(2**62), le=2**62)]


class RecordOut(Schema):
    id: str
    kind: str
    channel_id: int | None = Field(None, description="The conversation's peer id (per-conversation kinds)")
    content: str
    created: dt.datetime | None
    fields: dict[str, Any] = Field(description="The kind's own fields, e.g. an event's time and interval")


class RecordIn(Schema):
    content: str = Field(
        min_length=1, max_length=20000, description="The text (an event's intent, an activity's name)"
    )
    channel_id: PeerId | None = Field(None, description="Required for plans, notes, summaries and events")
    id: EntryId | None = Field(None, description="Empty: a new id is made")
    created: str | None = Field(None, max_length=64, description="ISO 8601 date or date-time; empty: now")
    fields: dict[str, FieldValue] = Field(
        default_factory=dict,
        description="summaries: min_message_id, max_message_id, first_message_date, last_message_date; "
        "events: time, timezone, interval, occurrences; schedule: start_time, end_time, description, "
        "responsiveness",
    )


class RecordUpdate(Schema):
    content: str = Field(min_length=1, max_length=20000)
    created: str | None = Field(None, max_length=64)
    fields: dict[str, FieldValue] = Field(default_factory=dict)


RecordPage = page_schema(RecordOut, "RecordPage")


def _kind(kind: RecordName) -> RecordKind:
    return RECORD_KINDS[kind.value]


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


@router.get("/{agent_id}/records/{kind}", response={200: RecordPage, **ERRORS}, summary="List stored records")
def record_list(
    request: HttpRequest,
    agent_id: RowId,
    kind: RecordName,
    channel_id: PeerId | None = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
):
    record = _kind(kind)
    agent = visible_agent(request, agent_id, record.perm("view"))
    rows = records_of(record, agent_id=agent.pk, channel_id=channel_id)
    return page(request, rows, limit=limit, offset=offset, row=lambda row: record_row(record, row))


@router.post(
    "/{agent_id}/records/{kind}", response={201: RecordOut, **ERRORS}, summary="Create a stored record"
)
def record_create(request: HttpRequest, agent_id: RowId, kind: RecordName, body: RecordIn):
    record = _kind(kind)
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


@router.get(
    "/{agent_id}/records/{kind}/{entry_id}",
    response={200: RecordOut, **ERRORS},
    summary="Read a stored record",
)
def record_read(
    request: HttpRequest,
    agent_id: RowId,
    kind: RecordName,
    entry_id: EntryId,
    channel_id: PeerId | None = None,
):
    record = _kind(kind)
    agent = visible_agent(request, agent_id, record.perm("view"))
    return record_row(record, _existing(record, agent.pk, channel_id, entry_id))


@router.put(
    "/{agent_id}/records/{kind}/{entry_id}",
    response={200: RecordOut, **ERRORS},
    summary="Update a stored record",
)
def record_update(
    request: HttpRequest,
    agent_id: RowId,
    kind: RecordName,
    entry_id: EntryId,
    body: RecordUpdate,
    channel_id: PeerId | None = None,
):
    record = _kind(kind)
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


@router.delete(
    "/{agent_id}/records/{kind}/{entry_id}", response={204: None, **ERRORS}, summary="Delete a stored record"
)
def record_delete(
    request: HttpRequest,
    agent_id: RowId,
    kind: RecordName,
    entry_id: EntryId,
    channel_id: PeerId | None = None,
):
    record = _kind(kind)
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
