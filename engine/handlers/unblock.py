"""unblock: unblock the DM partner."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from engine.handlers.base import Done, HandlerContext, register
from engine.handlers.block import require_dm, set_blocked


@register("unblock")
async def handle_unblock(ctx: HandlerContext) -> Done:
    user_id = require_dm(ctx)
    await ctx.transport.unblock(user_id)
    await sync_to_async(set_blocked)(ctx.conversation, False)
    return Done(f"unblocked {ctx.conversation.title or user_id}")
