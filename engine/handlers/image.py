"""image: send the picture the turn's planning made (llm/images.py) as a photo with its caption.

The picture is already in the agent's media library (`unique_id`, its description curated); this node
only sends it, in the gateway: the random_id is stored before the first attempt, so a retried send
never duplicates. On Telegram the file is uploaded with the send, and the media id Telegram gives it
gets the same curated description.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from conversations.services.ingest import message_record_sent
from conversations.transport.base import PermanentError, topic_kwargs
from engine.handlers.base import Done, HandlerContext, register
from engine.handlers.send import stored_random_id
from engine.handlers.send_media import library_ref
from media_catalog.services.library import library_item_sent_as


@register("image")
async def handle_image(ctx: HandlerContext) -> Done:
    unique_id = str(ctx.params.get("unique_id") or "")
    ref = await sync_to_async(library_ref)(agent_id=ctx.agent.pk, unique_id=unique_id) if unique_id else None
    if ref is None:
        raise PermanentError(
            "MEDIA_NOT_FOUND",
            f"the picture {unique_id or '(none made)'} is not in agent {ctx.agent.name}'s media library",
        )
    caption = str(ctx.params.get("caption") or "")
    reply_to = ctx.params.get("reply_to")
    random_id = await stored_random_id(ctx)
    sent = await ctx.transport.send_media(
        ctx.conversation.peer_id,
        ref,
        random_id=random_id,
        reply_to=reply_to,
        caption=caption,
        **topic_kwargs(ctx.conversation.topic_id),
    )
    if sent.media_unique_id and sent.media_unique_id != ref.unique_id:  # uploaded with the send
        await sync_to_async(library_item_sent_as)(
            agent_id=ctx.agent.pk, unique_id=ref.unique_id, sent_unique_id=sent.media_unique_id
        )
    part = {"kind": "media", "media_kind": ref.media_kind, "unique_id": ref.unique_id, "mime": ref.mime}
    await sync_to_async(message_record_sent)(
        agent=ctx.agent,
        conversation=ctx.conversation,
        sent=sent,
        text=caption,
        reply_to=reply_to,
        media=[part],
    )
    return Done(f"sent picture {unique_id} as #{sent.message_id}", result={"message_id": sent.message_id})
