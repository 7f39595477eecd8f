"""Turns the agent starts itself: an xsend into another chat, an operator's nudge, a due event.

Each is an ordinary replan of the target conversation (`graph_replan`) whose trigger and context carry
the intent; planning shows it once (`llm.prompt.instructions`). Nothing here talks to Telegram.
"""

from __future__ import annotations

from conversations.models import ActivityEvent, Conversation, TaskGraph
from conversations.services.activity import record_event
from conversations.services.graphs import graph_replan


class XSendRefused(ValueError):
    pass


def conversation_xsend(
    *, source: Conversation, target_peer_id: int, intent: str, source_node_id: int
) -> TaskGraph:
    """Start a turn in the agent's conversation with `target_peer_id`, carrying `intent`.

    The policy holds here too, whoever calls: the target belongs to the same agent and is not `source`.
    A retried xsend node (the gateway died after the replan committed) finds its own graph by
    `source_node_id` and starts nothing new.
    """
    if target_peer_id == source.peer_id:
        raise XSendRefused("xsend cannot target the conversation it was asked in")
    target = Conversation.objects.filter(agent_id=source.agent_id, peer_id=target_peer_id).first()
    if target is None:
        raise XSendRefused(f"xsend target {target_peer_id} is not a conversation of this agent")
    if target.is_telegram_service:
        raise XSendRefused(f"xsend target {target_peer_id} is Telegram's service account, never a partner")
    earlier = TaskGraph.objects.filter(
        conversation=target, trigger=TaskGraph.Trigger.XSEND, context__xsend_node=source_node_id
    ).first()
    if earlier is not None:
        return earlier
    return graph_replan(
        conversation=target,
        trigger=TaskGraph.Trigger.XSEND,
        target_message_id=None,
        context={"xsend": intent, "xsend_node": source_node_id, "xsend_from": source.peer_id},
    )


def conversation_nudge(*, conversation: Conversation, intent: str = "", operator: str = "") -> TaskGraph:
    """An operator's nudge (the admin's XSend): a turn in `conversation`, with an optional intent."""
    graph = graph_replan(
        conversation=conversation,
        trigger=TaskGraph.Trigger.NUDGE,
        target_message_id=None,
        context={"xsend": intent.strip(), "operator": operator},
    )
    record_event(
        ActivityEvent.Kind.TRIGGER,
        agent_id=conversation.agent_id,
        conversation_id=conversation.pk,
        summary=f"nudged by {operator or 'an operator'}"
        + (f": {intent.strip()[:200]}" if intent.strip() else ""),
        data={"trigger": "nudge", "graph_id": graph.pk},
    )
    return graph
