"""Saving a photo, sticker or GIF seen in a chat into the catalog and the agent's media library.

The catalog: the media's description becomes curated with the operator's text, and the file the
gateway downloaded becomes the catalog's copy. The library: a sandbox agent gets a library item with
a copy of the file at once; a Telegram agent's gateway sends the media to the account's Saved
Messages (a `save_to_library` gateway request, engine/library_requests.py), where the library
refresh lists it. A media item already in the library is not saved again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import transaction

from agents.models import GatewayRequest
from agents.models import Transport as TransportKind
from agents.services.telegram_requests import gateway_request_create
from conversations.models import ActivityEvent, Conversation, Message
from conversations.services.activity import record_event
from media_catalog.models import STICKER_KINDS, LibraryItem, MediaDescription, MediaKind, StickerAccess
from media_catalog.parts import MediaItem, StoredMedia, media_items
from media_catalog.services.curation import media_description_curate
from media_catalog.services.library import library_item_save

#: The kinds an operator may save from a chat: what the agent can send again from its library.
SAVABLE_KINDS = (MediaKind.PHOTO, *STICKER_KINDS, MediaKind.GIF, MediaKind.ANIMATION)


class Outcome:
    SAVED = "saved"
    ALREADY = "already"
    PENDING = "pending"  # asked of the gateway earlier, not done yet
    REQUESTED = "requested"


@dataclass(frozen=True)
class MediaSave:
    """What saving did: `outcome` is one of `Outcome`; `request` the gateway request, if one was made."""

    outcome: str
    unique_id: str
    kind: str
    request: GatewayRequest | None = None

    @property
    def message(self) -> str:
        label = MediaKind(self.kind).label.lower() if self.kind in MediaKind.values else self.kind
        if self.outcome == Outcome.ALREADY:
            return (
                f"The {label} {self.unique_id} is already in the agent's library; its description is curated."
            )
        if self.outcome == Outcome.PENDING:
            return (
                f"The gateway is already saving the {label} {self.unique_id} to the library; "
                "its description is curated."
            )
        if self.outcome == Outcome.REQUESTED:
            return (
                f"The {label} {self.unique_id} is curated in the catalog; the gateway will save it to the "
                "account's Saved Messages, and the library lists it after that."
            )
        return f"The {label} {self.unique_id} is saved to the agent's library and curated in the catalog."


def savable(part: MediaItem) -> bool:
    return bool(part.unique_id) and part.media_kind in SAVABLE_KINDS


def _part_of(conversation: Conversation, message_id: int, unique_id: str) -> StoredMedia:
    message = Message.objects.filter(conversation=conversation, message_id=message_id).first()
    if message is None:
        raise ValidationError(f"message #{message_id} is not in this conversation: reload the page")
    part = next((p for p in media_items(message.media) if p.unique_id == unique_id), None)
    if part is None:
        raise ValidationError(f"message #{message_id} holds no media {unique_id!r}: reload the page")
    if not savable(part):
        kind = part.media_kind or "other"
        label = (
            "voice note"
            if kind == MediaKind.VOICE
            else MediaKind(kind).label.lower()
            if kind in MediaKind.values
            else kind
        )
        raise ValidationError(
            f"a {label} cannot be saved to the library: only photos, stickers, GIFs and animations can"
        )
    return part


def _stored_file(part: StoredMedia) -> Path | None:
    """The file the gateway downloaded for this part, under MEDIA_ROOT; None when there is none."""
    name = part.file
    if not name:
        return None
    root = Path(settings.MEDIA_ROOT).resolve()
    path = (root / name).resolve()
    return path if path.is_relative_to(root) and path.is_file() else None


def _curate(part: MediaItem, text: str) -> MediaDescription:
    unique_id = part.unique_id
    row, created = MediaDescription.objects.get_or_create(
        unique_id=unique_id,
        defaults={
            "kind": part.media_kind,
            "mime": part.mime,
            "sticker_set_name": part.sticker_set_name,
            "sticker_name": part.sticker_name,
            "description": text,
            "source": MediaDescription.Source.CURATED,
            "status": MediaDescription.Status.CURATED,
        },
    )
    if not created:
        media_description_curate(description=row, text=text)
    path = _stored_file(part)
    if not row.file and path is not None:
        with path.open("rb") as handle:
            row.file.save(f"{unique_id}{path.suffix.lower()}", File(handle), save=False)
        row.save(update_fields=["file", "updated"])
    return row


def _kept(conversation: Conversation, unique_id: str) -> str:
    """Outcome.ALREADY when the library holds the media, Outcome.PENDING when the gateway was asked to
    save it and has not finished, else ""."""
    agent_id = conversation.agent_id
    if LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id).exists():
        return Outcome.ALREADY
    access = StickerAccess.objects.filter(agent_id=agent_id).first()
    if access is not None and any(s.get("unique_id") == unique_id for s in access.saved_stickers or []):
        return Outcome.ALREADY  # a set's sticker in Saved Messages: in the sticker list, not a library item
    pending = GatewayRequest.objects.filter(
        agent_id=agent_id,
        kind=GatewayRequest.Kind.SAVE_TO_LIBRARY,
        status__in=[GatewayRequest.Status.PENDING, GatewayRequest.Status.RUNNING],
        params__unique_id=unique_id,
    ).exists()
    return Outcome.PENDING if pending else ""


def _sandbox_item(conversation: Conversation, part: StoredMedia, text: str) -> LibraryItem:
    path = _stored_file(part)
    if path is None:
        raise ValidationError(
            f"the file of media {part.unique_id} is not stored (it was not downloaded): "
            "a sandbox library item needs the file"
        )
    unique_id = part.unique_id
    item = LibraryItem(
        agent_id=conversation.agent_id,
        unique_id=unique_id,
        kind=part.media_kind,
        mime=part.mime,
        description=text,
    )
    with path.open("rb") as handle:
        item.file.save(f"{conversation.agent_id}/{unique_id}{path.suffix.lower()}", File(handle), save=False)
    return library_item_save(item=item)


def conversation_media_save(
    *, conversation: Conversation, message_id: int, unique_id: str, description: str, by: str
) -> MediaSave:
    """Curate the media `unique_id` of message #`message_id` with `description` and put it in the
    agent's library (see the module docstring). Raises ValidationError naming what is wrong."""
    text = (description or "").strip()
    part = _part_of(conversation, message_id, unique_id)
    if not text:
        raise ValidationError({"description": "write what the media shows: the agent reads it in its prompt"})
    kind = part.media_kind
    with transaction.atomic():
        _curate(part, text)
        if kept := _kept(conversation, unique_id):
            LibraryItem.objects.filter(agent_id=conversation.agent_id, unique_id=unique_id).update(
                description=text
            )
            result = MediaSave(kept, unique_id, kind)
        elif conversation.agent.transport == TransportKind.TELEGRAM:
            request = gateway_request_create(
                agent=conversation.agent,
                kind=GatewayRequest.Kind.SAVE_TO_LIBRARY,
                params={
                    "peer_id": conversation.peer_id,
                    "message_id": message_id,
                    "unique_id": unique_id,
                    "description": text,
                },
            )
            result = MediaSave(Outcome.REQUESTED, unique_id, kind, request)
        else:
            _sandbox_item(conversation, part, text)
            result = MediaSave(Outcome.SAVED, unique_id, kind)
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=conversation.agent_id,
        conversation_id=conversation.pk,
        summary=f"{by}: {result.message}",
        data={"media_save": result.outcome, "unique_id": unique_id, "message_id": message_id},
    )
    return result


def media_save_options(
    *, conversation: Conversation, parts: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """For each savable media part (stored parts, by unique id): its catalog text, to edit before
    saving, and whether it is already in the agent's library. Two queries, for the page's every form."""
    ids = {p.unique_id for p in media_items(parts) if savable(p)}
    if not ids:
        return {}
    texts = dict(MediaDescription.objects.filter(unique_id__in=ids).values_list("unique_id", "description"))
    kept = set(
        LibraryItem.objects.filter(agent_id=conversation.agent_id, unique_id__in=ids).values_list(
            "unique_id", flat=True
        )
    )
    return {uid: {"description": texts.get(uid) or "", "in_library": uid in kept} for uid in ids}
