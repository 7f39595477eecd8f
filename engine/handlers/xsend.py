"""xsend: start a turn in another of the agent's conversations, carrying the intent to its future self."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from conversations.services.initiative import XSendRefused, conversation_xsend
from conversations.transport.base import PermanentError
from engine.handlers.base import Done, HandlerContext, register


@register("xsend")
async def handle_xsend(ctx: HandlerContext) -> Done:
    target = ctx.params.get("target_channel_id")
    if target is None:
        raise PermanentError("BAD_TASK", f"xsend needs target_channel_id, got {ctx.params!r}")
    try:
        graph = await sync_to_async(conversation_xsend)(
            source=ctx.conversation,
            target_peer_id=int(target),
            intent=str(ctx.params.get("intent") or ""),
            source_node_id=ctx.node.pk,
        )
    except XSendRefused as exc:
        raise PermanentError("XSEND_REFUSED", str(exc)) from None
    return Done(f"started a turn in {graph.conversation}", result={"graph_id": graph.pk})
