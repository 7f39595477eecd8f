"""Edits made by people in the admin: per-conversation settings (the price table: llm/prices.py)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.services.telegram_requests import conversation_request_mute
from cindy_site.llm_names import UnknownModelError, resolve
from conversations.models import Conversation
from conversations.services.activity import record_event


def conversation_validate(*, conversation: Conversation) -> None:
    if conversation.llm_model:
        try:
            resolve(conversation.llm_model)
        except UnknownModelError as exc:
            raise ValidationError({"llm_model": str(exc)}) from None


@transaction.atomic
def conversation_settings_save(*, conversation: Conversation, changed: list[str]) -> Conversation:
    """Store operator settings of a conversation (muted, LLM override) and note the change in the stream.

    A mute lives on Telegram: a changed `muted` is also sent there through a gateway request, so the
    dialog refresh, which copies Telegram's mute state back, keeps it instead of undoing it.
    """
    conversation_validate(conversation=conversation)
    conversation.save()
    if "muted" in changed:
        conversation_request_mute(
            agent=conversation.agent, peer_id=conversation.peer_id, muted=conversation.muted
        )
    if changed:
        record_event(
            "info",
            agent_id=conversation.agent_id,
            conversation_id=conversation.pk,
            summary=f"Settings changed in the admin: {', '.join(sorted(changed))}",
            data={"changed": sorted(changed)},
        )
    return conversation


@transaction.atomic
def conversations_set_muted(*, conversations: list[Conversation], muted: bool) -> int:
    """Mute or unmute conversations here and, through the gateway, on Telegram; returns how many changed."""
    changed = [c for c in conversations if c.muted != muted]
    for conversation in changed:
        conversation.muted = muted
        conversation_settings_save(conversation=conversation, changed=["muted"])
    return len(changed)


@transaction.atomic
def conversation_gag(*, conversation: Conversation, gagged: bool, by: str = "") -> Conversation:
    """Gag or ungag one conversation: while gagged, its messages are recorded but the agent does not act."""
    if conversation.gagged != gagged:
        conversation.gagged = gagged
        conversation.save(update_fields=["gagged", "updated"])
        record_event(
            "info",
            agent_id=conversation.agent_id,
            conversation_id=conversation.pk,
            summary=("Gagged" if gagged else "Ungagged") + (f" by {by}" if by else ""),
            data={"gagged": gagged, "by": by},
        )
    return conversation


@transaction.atomic
def conversation_llm_set(*, conversation: Conversation, llm_model: str, by: str = "") -> Conversation:
    """Set (or clear, with "") the conversation's LLM override; an unknown name is a ValidationError."""
    llm_model = llm_model.strip()
    conversation.llm_model = llm_model
    conversation_validate(conversation=conversation)
    conversation.save(update_fields=["llm_model", "updated"])
    record_event(
        "info",
        agent_id=conversation.agent_id,
        conversation_id=conversation.pk,
        summary=f"LLM set to {llm_model or 'the agent default'}" + (f" by {by}" if by else ""),
        data={"llm_model": llm_model, "by": by},
    )
    return conversation
