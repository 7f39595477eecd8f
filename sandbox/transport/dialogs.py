"""The sandbox's dialog list and chat details, with the unread marks Telegram's dialog list carries."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from conversations.transport.base import WRITE_REFUSALS, ChatDetails
from sandbox.models import SandboxChat, SandboxMember, SandboxMessage, SandboxUser

#: The dialog list counts unread mentions and reactions among a chat's newest this many messages.
MARKS_WINDOW = 200


class SandboxDialogs:
    """Mixed into `SandboxTransport`: `dialogs`, `get_details`, `is_muted` and `is_blocked`."""

    async def dialogs(self, *, limit: int = 100) -> list[ChatDetails]:
        return await sync_to_async(self._dialogs)(limit)

    def _dialogs(self, limit: int) -> list[ChatDetails]:
        """The dialog list: the members and the block list are read once for all its chats."""
        me = self._require_me()
        chats = list(self._my_chats().order_by("-id")[:limit])
        mine: dict[int, SandboxMember] = {}
        others: dict[int, list[SandboxUser]] = {chat.pk: [] for chat in chats}
        blocked: list[int] = []
        for member in SandboxMember.objects.filter(chat__in=chats).select_related("user"):
            if member.user_id == me.pk:
                mine[member.chat_id] = member
                blocked = member.user.blocked_user_ids or []  # the account's own row, read fresh
            else:
                others[member.chat_id].append(member.user)
        return [
            self._details(
                chat,
                marks=True,
                known=(mine.get(chat.pk), sorted(others[chat.pk], key=lambda u: (u.name, u.pk)), blocked),
            )
            for chat in chats
        ]

    async def get_details(self, peer_id: int) -> ChatDetails:
        return await sync_to_async(lambda: self._details(self._chat_for_peer(peer_id)))()

    def _details(
        self,
        chat: SandboxChat,
        *,
        marks: bool = False,
        known: tuple[SandboxMember | None, list[SandboxUser], list[int]] | None = None,
    ) -> ChatDetails:
        """The chat's details; with `marks`, the dialog list's marks too (see `_marks`). `known` is
        (the account's member row, the other members by name, the account's block list), read by
        the caller for several chats at once."""
        me = self._require_me()
        if known is None:
            member = SandboxMember.objects.filter(chat=chat, user=me).first()
            others = list(chat.members.exclude(pk=me.pk).order_by("name"))
            blocked_ids = None
        else:
            member, others, blocked_ids = known
        if chat.kind == SandboxChat.Kind.GROUP:
            peer = chat.peer_id
        else:
            peer = others[0].user_id if others else me.user_id
        read = {"read_inbox_max_id": member.read_up_to if member else 0}
        extra = self._marks(chat, member) if marks else read
        if chat.kind == SandboxChat.Kind.GROUP:
            return ChatDetails(
                peer_id=peer,
                kind="group",
                title=chat.title,
                participants_count=len(others) + 1,
                participants=tuple(u.name for u in others),
                muted=bool(member and member.muted),
                extra=extra,
                cannot_write=WRITE_REFUSALS.get(member.cannot_write if member else "", ""),
            )
        other = others[0] if others else me
        return ChatDetails(
            peer_id=peer,
            kind="dm",
            title=other.name,
            username=other.username,
            muted=bool(member and member.muted),
            # Read fresh: the account's block list may have changed since connect (another device).
            blocked=other.user_id
            in (
                blocked_ids
                if blocked_ids is not None
                else SandboxUser.objects.values_list("blocked_user_ids", flat=True).get(pk=me.pk) or []
            ),
            extra=extra,
        )

    def _marks(self, chat: SandboxChat, member: SandboxMember | None) -> dict[str, Any]:
        """The dialog list's marks (see `ChatDetails`): what is unread for the account, as Telegram
        counts it (messages of others after its read mark, mentions among them, unread reactions on
        its own messages)."""
        me = self._require_me()
        read = member.read_up_to if member else 0
        live = SandboxMessage.objects.filter(chat=chat, deleted=False)
        top = live.order_by("-message_id").values_list("message_id", "date").first()
        unread = live.filter(message_id__gt=read).exclude(sender=me)
        unread_count = unread.count() if top is not None and top[0] > read else 0
        # Mentions and reactions are looked for among the newest MARKS_WINDOW messages only.
        texts = (
            unread.order_by("-message_id").values_list("text", flat=True)[:MARKS_WINDOW]
            if unread_count
            else ()
        )
        own = (
            live.filter(sender=me).order_by("-message_id").values_list("reactions", flat=True)[:MARKS_WINDOW]
        )
        return {
            "read_inbox_max_id": read,
            "top_message": top[0] if top else 0,
            "top_date": top[1] if top else None,
            "unread_count": unread_count,
            "unread_mark": bool(member and member.unread_mark),
            "unread_mentions_count": sum(1 for text in texts if self._mentions_me(text)),
            "unread_reactions_count": sum(1 for r in own if any(x.get("unread") for x in r or [])),
        }

    async def is_muted(self, peer_id: int) -> bool:
        return (await self.get_details(peer_id)).muted

    async def is_blocked(self, user_id: int) -> bool:
        return await sync_to_async(
            lambda: user_id in (SandboxUser.objects.get(pk=self._require_me().pk).blocked_user_ids or [])
        )()
