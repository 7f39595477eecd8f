"""The sandbox's rows as the transport protocol's plain records, as one account sees them."""

from __future__ import annotations

import re
from typing import Any

from conversations.transport.base import WRITE_REFUSALS, InboundMessage, MediaItem, ReactionInfo
from sandbox.models import SandboxChat, SandboxMember, SandboxMessage, SandboxTopic


def reactions_info(raw: list[dict[str, Any]]) -> tuple[ReactionInfo, ...]:
    """A message's stored reactions as the transport protocol's records."""
    return tuple(
        ReactionInfo(
            emoji=r["emoji"],
            count=int(r.get("count", 1)),
            user_ids=tuple(r.get("user_ids", [])),
            unread=bool(r.get("unread", False)),
        )
        for r in raw
    )


class SandboxInbound:
    """Mixed into `SandboxTransport`: messages as `InboundMessage` records for the account."""

    def _mentions_me(self, text: str) -> bool:
        me = self._require_me()
        handles = [h for h in (me.username, me.name) if h]
        return any(re.search(rf"@{re.escape(h)}\b", text, flags=re.IGNORECASE) for h in handles)

    def _to_inbound(self, messages: list[SandboxMessage], chat: SandboxChat) -> list[InboundMessage]:
        me = self._require_me()
        other = self._partner_of(chat)
        peer = self._peer_given(chat, other)
        partner = other or me
        reply_ids = {m.reply_to_id for m in messages if m.reply_to_id}
        mine = (
            set(
                SandboxMessage.objects.filter(chat=chat, message_id__in=reply_ids, sender=me).values_list(
                    "message_id", flat=True
                )
            )
            if reply_ids
            else set()
        )
        topics = (
            dict(SandboxTopic.objects.filter(chat=chat).values_list("topic_id", "title"))
            if chat.forum
            else {}
        )
        refusal = self._write_refusal(chat)
        records = []
        for m in messages:
            outgoing = m.sender_id == me.pk
            records.append(
                InboundMessage(
                    peer_id=peer,
                    chat_kind=chat.kind,
                    message_id=m.message_id,
                    date=m.date,
                    sender_id=m.sender.user_id,
                    sender_name=m.sender.name,
                    sender_username=m.sender.username,
                    sender_is_bot=m.sender.is_bot,
                    is_outgoing=outgoing,
                    text=m.text,
                    reply_to_id=m.reply_to_id,
                    media=tuple(MediaItem.from_part(p) for p in m.media),
                    reactions=reactions_info(m.reactions),
                    mentions_agent=not outgoing and self._mentions_me(m.text),
                    reply_to_agent=not outgoing and m.reply_to_id in mine,
                    # A DM is titled after the other person, whoever wrote this message.
                    chat_title=chat.title if chat.kind == SandboxChat.Kind.GROUP else partner.name,
                    chat_username="" if chat.kind == SandboxChat.Kind.GROUP else partner.username,
                    random_id=m.random_id if outgoing else None,
                    topic_id=m.topic_id if m.topic_id in topics else None,
                    topic_title=topics.get(m.topic_id, ""),
                    cannot_write=refusal,
                )
            )
        return records

    def _write_refusal(self, chat: SandboxChat) -> str:
        """Why the account may not write in this group (`SandboxMember.cannot_write`), "" when it may."""
        if chat.kind != SandboxChat.Kind.GROUP:
            return ""
        code = (
            SandboxMember.objects.filter(chat=chat, user=self._require_me())
            .values_list("cannot_write", flat=True)
            .first()
        )
        return WRITE_REFUSALS.get(code or "", "")
