"""send_media (alias photo): send an item of the agent's media library by its unique id."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from conversations.services.ingest import message_record_sent
from conversations.transport.base import LibraryRef, PermanentError, topic_kwargs
from engine.handlers.base import Done, HandlerContext, register
from engine.handlers.send import stored_random_id
from media_catalog.models import LibraryItem
from media_catalog.services.library import library_item_sent_as


def library_ref(*, agent_id: int, unique_id: str) -> LibraryRef | None:
    item = LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id).first()
    if item is None:
        return None
    return LibraryRef(
        unique_id=item.unique_id,
        media_kind=item.kind,
        saved_message_id=item.saved_message_id,
        file=item.file.name if item.file else "",
        mime=item.mime,
    )


@register("send_media")
async def handle_send_media(ctx: HandlerContext) -> Done:
    unique_id = str(ctx.params.get("unique_id") or "")
    ref = await sync_to_async(library_ref)(agent_id=ctx.agent.pk, unique_id=unique_id)
    if ref is None:
        raise PermanentError(
            "MEDIA_NOT_FOUND", f"{unique_id!r} is not in agent {ctx.agent.name}'s media library"
        )
    random_id = await stored_random_id(ctx)
    reply_to = ctx.params.get("reply_to")
    sent = await ctx.transport.send_media(
        ctx.conversation.peer_id,
        ref,
        random_id=random_id,
        reply_to=reply_to,
        **topic_kwargs(ctx.conversation.topic_id),
    )
    if sent.media_unique_id and sent.media_unique_id != ref.unique_id:  # uploaded with the send
        await sync_to_async(library_item_sent_as)(
            agent_id=ctx.agent.pk, unique_id=ref.unique_id, sent_unique_id=sent.media_unique_id
        )
    part = {"kind": "media", "media_kind": ref.media_kind, "unique_id": ref.unique_id, "mime": ref.mime}
    await sync_to_async(message_record_sent)(
        agent=ctx.agent, conversation=ctx.conversation, sent=sent, reply_to=reply_to, media=[part]
    )
    return Done(f"sent media {unique_id} as #{sent.message_id}", result={"message_id": sent.message_id})
