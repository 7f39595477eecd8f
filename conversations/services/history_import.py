"""Writing an imported history into the mirror: a batch of past messages of one conversation.

An import (`manage.py importchat`, cwimport/chatexport/) brings messages that are already history:
they are stored as they were (their ids, dates, senders, edits), announced with `message_stored`
(so the recall index takes them in, conversations/signals.py), and never trigger a turn. A message
id the conversation already holds is left as it is, whatever the file says, so importing the same
file twice adds nothing and a stopped import resumes by running it again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from agents.models import Agent
from cindy_site import rows
from conversations.models import ActivityEvent, Conversation, Message
from conversations.services.activity import record_event
from conversations.signals import message_stored
from conversations.transport.base import InboundMessage


@dataclass(frozen=True)
class ImportedBatch:
    """What one batch did: messages stored (`service` of them service lines), and messages the
    conversation already held."""

    created: int
    already: int
    service: int = 0


def history_import_batch(
    *, agent: Agent, conversation: Conversation, records: Sequence[InboundMessage]
) -> ImportedBatch:
    """Store `records` (past messages of `conversation`) that it does not hold yet, in one transaction.

    The conversation's last message time moves forward to the newest imported message when that is
    newer, and its read mark to the highest imported id: history is read history, so nothing
    imported counts as unread. One `info` activity event names the batch."""
    if not records:
        return ImportedBatch(created=0, already=0)
    ids = [int(r.message_id) for r in records]
    with transaction.atomic():
        held = set(
            Message.objects.filter(conversation=conversation, message_id__in=ids).values_list(
                "message_id", flat=True
            )
        )
        fresh = [r for r in records if int(r.message_id) not in held]
        for record in fresh:
            message = rows.insert(_message(conversation, record))
            message_stored.send(Message, conversation=conversation, message=message, created=True)
        if fresh:
            _move_marks(conversation, fresh)
            record_event(
                ActivityEvent.Kind.INFO,
                agent_id=agent.pk,
                conversation_id=conversation.pk,
                summary=(
                    f"imported {len(fresh)} past message{'s' if len(fresh) != 1 else ''} "
                    f"(#{min(r.message_id for r in fresh)} to #{max(r.message_id for r in fresh)})"
                ),
                data={"imported": len(fresh), "already": len(records) - len(fresh)},
            )
    service = sum(1 for r in fresh if r.is_service)
    return ImportedBatch(created=len(fresh), already=len(records) - len(fresh), service=service)


def _message(conversation: Conversation, record: InboundMessage) -> Message:
    return Message(
        conversation=conversation,
        message_id=record.message_id,
        sender_id=record.sender_id,
        sender_name=record.sender_name[:255],
        sender_username=(record.sender_username or "")[:64],
        sender_is_bot=record.sender_is_bot,
        is_agent=record.is_outgoing,
        date=record.date,
        text=record.text,
        reply_to_id=record.reply_to_id,
        media=[item.to_part() for item in record.media],
        reactions=[r.to_json() for r in record.reactions],
        forwarded_from=record.forwarded_from[:255],
        is_service=record.is_service,
        edited=record.edited_at is not None,
        edited_at=record.edited_at,
    )


def _move_marks(conversation: Conversation, fresh: Sequence[InboundMessage]) -> None:
    newest: dt.datetime = max(r.date for r in fresh)
    highest = max(int(r.message_id) for r in fresh)
    changed = {}
    if conversation.last_message_at is None or newest > conversation.last_message_at:
        changed["last_message_at"] = newest
    if conversation.last_read_message_id is None or highest > conversation.last_read_message_id:
        changed["last_read_message_id"] = highest
    if changed:
        Conversation.objects.filter(pk=conversation.pk).update(**changed)
        for field, value in changed.items():
            setattr(conversation, field, value)
