"""sticker: send a sticker named by (set, name).

Resolution, in order: the agent's configured sticker sets, its explicit stickers and the stickers in
its account's Saved Messages, from the media catalog; then the transport (a set fetched from Telegram, cached for the client's life). A sticker
that cannot be resolved is sent as its name in plain text, and that is logged.
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async

from agents.models import Agent
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from conversations.services.ingest import message_record_sent
from conversations.transport.base import PermanentError, StickerRef, Transport, topic_kwargs
from engine.handlers.base import Done, HandlerContext, register
from engine.handlers.send import stored_random_id
from media_catalog.models import Sticker
from media_catalog.selectors import saved_stickers_of

logger = logging.getLogger(__name__)


def catalog_sticker(agent: Agent, set_name: str, name: str) -> StickerRef | None:
    """The sticker from the media catalog if the agent is configured to use it."""
    allowed = set_name in (agent.sticker_set_names or []) or f"{set_name}::{name}" in (
        agent.explicit_stickers or []
    )
    if not allowed:  # a sticker in the account's Saved Messages is the agent's too
        allowed = any(
            s.get("set") == set_name and s.get("name") == name for s in saved_stickers_of(agent_id=agent.pk)
        )
    if not allowed:
        return None
    # MySQL's utf8mb4 collations compare many emoji as equal (🙈 = 😉): the exact name is checked here.
    rows = Sticker.objects.filter(sticker_set__short_name=set_name, name=name).order_by("position", "id")
    row = next((r for r in rows if r.name == name), None)
    if row is None:
        return None
    ref = {"document_id": row.document_id, "access_hash": row.access_hash}
    if row.file_reference:
        ref["file_reference"] = bytes(row.file_reference).hex()
    return StickerRef(set_short_name=set_name, name=name, unique_id=row.unique_id, ref=ref)


async def transport_sticker(transport: Transport, set_name: str, name: str) -> StickerRef | None:
    cache: dict = transport.__dict__.setdefault("_cindy_sticker_sets", {})
    if set_name not in cache:
        try:
            cache[set_name] = await transport.resolve_sticker_set(set_name)
        except PermanentError as exc:
            logger.info("sticker set %r cannot be resolved: %s", set_name, exc)
            cache[set_name] = None
    info = cache[set_name]
    if info is None:
        return None
    return next((s for s in info.stickers if s.name == name), None)


@register("sticker")
async def handle_sticker(ctx: HandlerContext) -> Done:
    set_name = str(ctx.params.get("sticker_set") or "")
    name = str(ctx.params.get("name") or "")
    if not name:
        raise PermanentError("BAD_TASK", f"sticker needs a name, got {ctx.params!r}")
    reply_to = ctx.params.get("reply_to")
    random_id = await stored_random_id(ctx)
    sticker = await sync_to_async(catalog_sticker)(ctx.agent, set_name, name) if set_name else None
    if sticker is None and set_name:
        sticker = await transport_sticker(ctx.transport, set_name, name)
    peer = ctx.conversation.peer_id
    topic = topic_kwargs(ctx.conversation.topic_id)
    if sticker is None:
        sent = await ctx.transport.send_text(peer, name, random_id=random_id, reply_to=reply_to, **topic)
        await sync_to_async(message_record_sent)(
            agent=ctx.agent, conversation=ctx.conversation, sent=sent, text=name, reply_to=reply_to
        )
        await sync_to_async(record_event)(
            ActivityEvent.Kind.INFO,
            agent_id=ctx.agent.pk,
            conversation_id=ctx.conversation.pk,
            node_id=ctx.node.pk,
            summary=f"sticker {set_name}::{name} not found; sent its name as text",
        )
        logger.warning("agent %s: sticker %s::%s not found, sent as text", ctx.agent.name, set_name, name)
        return Done(f"sticker {set_name}::{name} unresolved, sent as text", {"message_id": sent.message_id})
    sent = await ctx.transport.send_sticker(peer, sticker, random_id=random_id, reply_to=reply_to, **topic)
    part = {
        "kind": "media",
        "media_kind": "sticker",
        "sticker_set_name": sticker.set_short_name,
        "sticker_name": sticker.name,
        "unique_id": sticker.unique_id,
    }
    await sync_to_async(message_record_sent)(
        agent=ctx.agent, conversation=ctx.conversation, sent=sent, reply_to=reply_to, media=[part]
    )
    return Done(f"sticker {set_name}::{name} sent as #{sent.message_id}", {"message_id": sent.message_id})
