"""Turns the agent starts itself: an xsend into another chat, an operator's nudge, a due event.

Each is an ordinary replan of the target conversation (`graph_replan`) whose trigger and context carry
the intent; planning shows it once (`llm.prompt.instructions`). Nothing here talks to Telegram.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.conf import settings

from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, NodeStatus, TaskGraph, TaskNode
from conversations.services.activity import record_event
from conversations.services.carry import queued_has, xsend_depth
from conversations.services.graphs import graph_active, graph_replan


class XSendRefused(ValueError):
    pass


def conversation_xsend(
    *,
    source: Conversation,
    target_peer_id: int,
    intent: str,
    source_node_id: int,
    read: Sequence[str] = (),
    untrusted: Sequence[str] = (),
) -> TaskGraph:
    """Start a turn in the agent's conversation with `target_peer_id`, carrying `intent` and where it
    came from: the source chat's title (`xsend_from_title`) and what the asking turn had read from
    outside that chat (`read`, and the part anybody could have written, `untrusted`: labels such as
    "1 retrieved web page"), which the target turn's prompt states and its policy counts.

    The policy holds here too, whoever calls: the target belongs to the same agent, is not `source`
    and is a chat the account may write in (`Conversation.cannot_write`), and the turn that asked is not already CINDY_XSEND_MAX_DEPTH xsend hops deep nor over
    CINDY_XSENDS_PER_HOUR. The new turn records its own depth (`context["xsend_depth"]`). A retried
    xsend node (the gateway died after the replan committed) finds its own graph, or its trigger
    queued behind or carried by the target's active graph, by `source_node_id` and starts nothing new.
    """
    source_graph = TaskGraph.objects.filter(nodes__pk=source_node_id).first()
    depth = xsend_depth(source_graph)
    if target_peer_id == source.peer_id:
        raise XSendRefused("xsend cannot target the conversation it was asked in")
    # A forum group is targeted as a whole: its General conversation (topic 0), not one of its topics.
    target = Conversation.objects.filter(agent_id=source.agent_id, peer_id=target_peer_id, topic_id=0).first()
    if target is None:
        raise XSendRefused(f"xsend target {target_peer_id} is not a conversation of this agent")
    if target.is_telegram_service:
        raise XSendRefused(f"xsend target {target_peer_id} is Telegram's service account, never a partner")
    if target.cannot_write:
        raise XSendRefused(
            f"xsend target {target_peer_id} is a chat the account cannot write in: {target.cannot_write}"
        )
    earlier = TaskGraph.objects.filter(
        conversation=target, trigger=TaskGraph.Trigger.XSEND, context__xsend_node=source_node_id
    ).first()
    if earlier is not None:
        return earlier
    active = graph_active(conversation=target)
    if active is not None and queued_has(active, "xsend_node", source_node_id):
        return active  # queued behind the turn under way, or carried by it
    # The xsend node running now is one of the agent's xsends of the last hour already.
    if refusal := xsend_limit_refusal(conversation=source, depth=depth, earlier=-1):
        raise XSendRefused(refusal)
    return graph_replan(
        conversation=target,
        trigger=TaskGraph.Trigger.XSEND,
        target_message_id=None,
        context={
            "xsend": intent,
            "xsend_node": source_node_id,
            "xsend_from": source.peer_id,
            "xsend_from_title": source.display_title,
            "xsend_depth": depth + 1,
            **({"xsend_read": list(read)} if read else {}),
            **({"xsend_untrusted": list(untrusted)} if untrusted else {}),
        },
    )


def xsend_limit_refusal(*, conversation: Conversation, depth: int, earlier: int = 0) -> str:
    """The hop and rate limits on xsend (module docstring), or "" when neither is reached."""
    limit = settings.CINDY_XSEND_MAX_DEPTH
    if depth >= limit:
        return (
            f"xsend refused: this turn was started by a chain of {depth} xsend(s) and "
            f"CINDY_XSEND_MAX_DEPTH is {limit}, so it may not start another"
        )
    per_hour = settings.CINDY_XSENDS_PER_HOUR
    since = now() - dt.timedelta(hours=1)
    started = (
        TaskNode.objects.filter(agent_id=conversation.agent_id, kind="xsend", created__gte=since)
        .exclude(status=NodeStatus.CANCELLED)
        .count()
    )
    if started + earlier >= per_hour:
        return (
            f"xsend refused: agent {conversation.agent.name} started {started + earlier} xsend(s) in the "
            f"last hour and CINDY_XSENDS_PER_HOUR is {per_hour}"
        )
    return ""


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
