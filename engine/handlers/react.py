"""react: put an emoji reaction on a message of the conversation."""

from __future__ import annotations

from conversations.transport.base import PermanentError
from engine.handlers.base import Done, HandlerContext, register


@register("react")
async def handle_react(ctx: HandlerContext) -> Done:
    emoji = str(ctx.params.get("emoji") or "")
    message_id = ctx.params.get("message_id")
    if not emoji or message_id is None:
        raise PermanentError("BAD_TASK", f"react needs emoji and message_id, got {ctx.params!r}")
    await ctx.transport.react(ctx.conversation.peer_id, int(message_id), emoji)
    return Done(f"reacted {emoji} to #{message_id}")
