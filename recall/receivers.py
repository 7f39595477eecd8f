"""Keeping the recall index current: what recall does when a message, a stored record or a document
changes.

Messages are written with plain SQL and `update()` (`conversations/services/ingest.py`), which send
no model signals, so the conversations app announces them (`conversations.signals`). Memories,
notes, summaries, plans, intentions and documents are saved through the ORM (`stored_entry_apply`,
the admin), whose `post_save` and `post_delete` are enough; bulk paths that send neither (a curated
memory file imported with `bulk_create`) are picked up by `manage.py recall_index`. A media
description written after its message was indexed indexes the message again (`RecallMediaWait`).
"""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from agents.models import AgentDocument
from cindy_site.clock import now
from conversations.models import Conversation, Message
from conversations.signals import message_stored, messages_deleted
from media_catalog.models import MediaDescription
from memory.models import Intention, Memory, Note, Plan, Summary
from recall.services import (
    document_index,
    document_unindex,
    media_described,
    message_index,
    messages_unindex,
    stored_index,
    stored_unindex,
)

STORED_MODELS = (Memory, Note, Summary, Plan, Intention)


@receiver(message_stored, dispatch_uid="recall.message_stored")
def index_stored_message(sender, *, conversation: Conversation, message: Message, **kwargs) -> None:
    message_index(conversation=conversation, message=message)


@receiver(messages_deleted, dispatch_uid="recall.messages_deleted")
def unindex_deleted_messages(sender, *, message_pks, conversation_id: int | None, **kwargs) -> None:
    messages_unindex(message_pks=message_pks, conversation_id=conversation_id)


@receiver(post_save, sender=Message, dispatch_uid="recall.message_saved")
def index_saved_message(sender, *, instance: Message, raw: bool = False, **kwargs) -> None:
    """A message saved through the ORM (the admin, fixtures) rather than by ingest."""
    if not raw:
        message_index(conversation=instance.conversation, message=instance)


def _index_stored(sender, *, instance, raw: bool = False, **kwargs) -> None:
    if not raw:
        stored_index(row=instance, at=now())


def _unindex_stored(sender, *, instance, **kwargs) -> None:
    stored_unindex(row=instance)


for _model in STORED_MODELS:
    post_save.connect(_index_stored, sender=_model, dispatch_uid=f"recall.saved.{_model.__name__}")
    post_delete.connect(_unindex_stored, sender=_model, dispatch_uid=f"recall.deleted.{_model.__name__}")


@receiver(post_save, sender=AgentDocument, dispatch_uid="recall.document_saved")
def index_saved_document(sender, *, instance: AgentDocument, raw: bool = False, **kwargs) -> None:
    if not raw:
        document_index(document=instance)


@receiver(post_delete, sender=AgentDocument, dispatch_uid="recall.document_deleted")
def unindex_deleted_document(sender, *, instance: AgentDocument, **kwargs) -> None:
    document_unindex(document=instance)


@receiver(post_save, sender=MediaDescription, dispatch_uid="recall.media_described")
def index_described_media(sender, *, instance: MediaDescription, raw: bool = False, **kwargs) -> None:
    """A description made or curated (the worker's first one, the admin's edit): the messages that
    were indexed without it are indexed again. The worker's later updates call `media_described`."""
    if not raw:
        media_described(unique_ids=[instance.unique_id])
