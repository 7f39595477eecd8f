"""Waiting while the partner types (DMs), as the original does.

A typing update from the other side of a DM (`PartnerTyping`) marks the conversation as "partner
typing" until the update runs out (`Conversation.partner_typing_until`). While it lasts, the pending
`received` node of the conversation waits: its `not_before` moves to the end of the typing, but never
later than CINDY_TYPING_WAIT_MAX_SECONDS after its graph was made, so a partner who types without end
still gets an answer. A message from the partner ends the typing (Telegram stops the indicator when
a message is sent) and replans as usual, which cancels the waiting graph: what was said before and
during the typing is answered in one turn. Typing in groups is ignored, as in the original.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from agents.models import Agent
from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, Message, NodeKind, NodeStatus, TaskNode
from conversations.services.activity import record_event
from conversations.transport.base import PartnerTyping


def _max_wait() -> dt.timedelta:
    return dt.timedelta(seconds=settings.CINDY_TYPING_WAIT_MAX_SECONDS)


def typing_hold(*, conversation: Conversation, since: dt.datetime, fresh: bool = True) -> dt.datetime | None:
    """When a reply planned at `since` may be read, given the partner's typing; None when not typing.

    `fresh=False` takes the typing time from `conversation` as it is (the caller read the row in its
    transaction and knows no typing was recorded since) instead of reading it again."""
    if conversation.kind != Conversation.Kind.DM:
        return None
    if fresh:
        until = (
            Conversation.objects.filter(pk=conversation.pk)
            .values_list("partner_typing_until", flat=True)
            .first()
        )
    else:
        until = conversation.partner_typing_until
    if until is None or until <= now():
        return None
    return min(until, since + _max_wait())


def partner_typing_record(*, agent: Agent, update: PartnerTyping) -> int:
    """Record the partner's typing and hold the conversation's pending reply. Returns nodes held."""
    conversation = Conversation.objects.filter(
        agent=agent, peer_id=update.peer_id, kind=Conversation.Kind.DM
    ).first()
    if conversation is None:
        return 0  # nothing to answer yet: the message that follows creates the conversation
    at = now()
    until = at + dt.timedelta(seconds=update.seconds) if update.seconds > 0 else None
    Conversation.objects.filter(pk=conversation.pk).update(partner_typing_until=until)
    if until is None:
        return 0  # a held reply runs when its hold ends, a few seconds from now at most
    held = 0
    pending = TaskNode.objects.filter(
        conversation=conversation, kind=NodeKind.RECEIVED, status=NodeStatus.PENDING
    ).select_related("graph")
    for node in pending:
        hold = min(until, node.graph.created + _max_wait())
        if node.not_before is None or node.not_before < hold:
            held += TaskNode.objects.filter(pk=node.pk, status=NodeStatus.PENDING).update(not_before=hold)
    if held:
        record_event(
            ActivityEvent.Kind.TYPING,
            agent_id=agent.pk,
            conversation_id=conversation.pk,
            summary=f"{conversation.display_title} is typing: the reply waits (until {hold:%H:%M:%S} at most)",
            data={"partner_typing_until": until.isoformat()},
        )
    return held


def partner_typing_end(*, conversation: Conversation, message: Message) -> bool:
    """The partner's message ends their typing. Returns whether it did (the row changed)."""
    if conversation.partner_typing_until is not None and not message.is_agent:
        Conversation.objects.filter(pk=conversation.pk).update(partner_typing_until=None)
        conversation.partner_typing_until = None
        return True
    return False
