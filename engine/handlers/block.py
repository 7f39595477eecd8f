"""block: block the DM partner. The policy layer has already allowed it; blocking is DM-only."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from conversations.models import Conversation
from conversations.transport.base import PermanentError
from engine.handlers.base import Done, HandlerContext, register


def set_blocked(conversation: Conversation, blocked: bool) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(blocked=blocked)
    conversation.blocked = blocked


def require_dm(ctx: HandlerContext) -> int:
    if ctx.conversation.kind != Conversation.Kind.DM:
        raise PermanentError("NOT_A_DM", f"{ctx.node.kind} only applies to direct messages")
    return ctx.conversation.peer_id


@register("block")
async def handle_block(ctx: HandlerContext) -> Done:
    user_id = require_dm(ctx)
    await ctx.transport.block(user_id)
    await sync_to_async(set_blocked)(ctx.conversation, True)
    return Done(f"blocked {ctx.conversation.title or user_id}")
