"""xsend: start a turn in another of the agent's conversations, carrying the intent to its future self."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from conversations.models import TaskGraph
from conversations.services.initiative import XSendRefused, conversation_xsend
from conversations.transport.base import PermanentError
from engine.handlers.base import Done, HandlerContext, register
from llm.policy import outside_text


def _start_turn(ctx: HandlerContext, *, target_peer_id: int, intent: str) -> Done:
    """Runs in a thread: the graph's conversation (and its agent) are read from the database. What the
    asking turn had read from outside its chat goes with the intent, so the target turn's prompt says
    where it came from and its policy counts text anybody could have written (`llm.policy.outside_text`)."""
    source = TaskGraph.objects.filter(pk=ctx.node.graph_id).first()
    read, untrusted = outside_text(source) if source is not None else ((), ())
    graph = conversation_xsend(
        source=ctx.conversation,
        target_peer_id=target_peer_id,
        intent=intent,
        source_node_id=ctx.node.pk,
        read=read,
        untrusted=untrusted,
    )
    return Done(f"started a turn in {graph.conversation}", result={"graph_id": graph.pk})


@register("xsend")
async def handle_xsend(ctx: HandlerContext) -> Done:
    target = ctx.params.get("target_channel_id")
    if target is None:
        raise PermanentError("BAD_TASK", f"xsend needs target_channel_id, got {ctx.params!r}")
    try:
        return await sync_to_async(_start_turn)(
            ctx, target_peer_id=int(target), intent=str(ctx.params.get("intent") or "")
        )
    except XSendRefused as exc:
        raise PermanentError("XSEND_REFUSED", str(exc)) from None
