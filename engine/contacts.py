"""A DM partner joins the account's contacts, as the original adds one when it answers them.

Before a DM's planning turn, the gateway adds the partner to the account's contacts under their own
names (Telegram's `contacts.addContact`), unless the mirror knows they are in already
(`Conversation.partner_in_contacts`). Telegram then names them as a contact everywhere (the dialog
list, entities, the profile details the prompt shows) and resolves them without an access hash. It is
best effort: a failure is logged and tried again at the next turn. Telegram's service account (777000)
and the agent's own Saved Messages are never added.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from asgiref.sync import sync_to_async

from conversations.models import ActivityEvent, Conversation
from conversations.services.activity import record_event
from conversations.transport.base import AuthError, FloodWait, Transport, TransportError

logger = logging.getLogger(__name__)


def _dm_not_in_contacts(conversation: Conversation) -> bool:
    """The part of `needs_contact` that reads only the conversation's own fields."""
    return conversation.kind == Conversation.Kind.DM and not conversation.partner_in_contacts


def needs_contact(conversation: Conversation) -> bool:
    return (
        _dm_not_in_contacts(conversation)
        and not conversation.is_telegram_service
        and not conversation.is_saved_messages  # reads the agent's row
    )


def contact_record(*, conversation: Conversation, name: str) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(partner_in_contacts=True)
    conversation.partner_in_contacts = True
    record_event(
        ActivityEvent.Kind.INFO,
        agent_id=conversation.agent_id,
        conversation_id=conversation.pk,
        summary=f"added {name} to the account's contacts",
        data={"contact": conversation.peer_id},
    )


async def partners_add_to_contacts(chats: Sequence[tuple[Transport, Conversation]]) -> int:
    """Add the partners of these DMs to their accounts' contacts where needed. Returns how many."""
    added = 0
    # A DM whose partner the mirror already knows as a contact (every chat after its first turn)
    # is left out on the loop: the rest of the check may read the agent's row.
    chats = [(t, c) for t, c in chats if _dm_not_in_contacts(c)]
    if not chats:
        return 0
    due = await sync_to_async(lambda: [(t, c) for t, c in chats if needs_contact(c)])()
    for transport, conversation in due:
        try:
            contact = await transport.add_contact(str(conversation.peer_id), first_name="")
        except (FloodWait, AuthError):
            raise
        except TransportError as exc:
            logger.info(
                "agent #%s: could not add %s to the contacts: %s",
                conversation.agent_id,
                conversation.display_title,
                exc,
            )
            continue
        name = f"{contact.first_name} {contact.last_name}".strip() or conversation.display_title
        await sync_to_async(contact_record)(conversation=conversation, name=name)
        added += 1
    return added
