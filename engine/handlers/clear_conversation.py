"""clear-conversation: delete the chat history on Telegram and in the mirror."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from conversations.services.ingest import conversation_clear_mirror
from engine.handlers.base import Done, HandlerContext, register


@register("clear-conversation")
async def handle_clear_conversation(ctx: HandlerContext) -> Done:
    await ctx.transport.delete_history(ctx.conversation.peer_id)
    cleared = await sync_to_async(conversation_clear_mirror)(conversation=ctx.conversation)
    return Done(f"cleared {cleared} messages", {"cleared": cleared})
