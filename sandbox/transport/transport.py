"""SandboxTransport: the transport protocol over the sandbox tables, as one agent's account sees them.

Peer ids follow Telegram: in a DM the peer is the other user's id, in a group it is the (negative) group
id. The update stream is the `SandboxUpdate` log read after a cursor; like Telegram's pts, a gap left
while disconnected is filled by the engine's reconciler from `history(since_id=...)`.

This module holds the connection, peers, history and the actions; the class takes the rest from the
modules beside it: records (`records.py`), the update stream (`updates.py`), the dialog list
(`dialogs.py`), media (`media.py`), the account's profile and contacts (`account.py`), voice notes
(`voice.py`) and the gateway's batch calls (`batch.py`).
"""

from __future__ import annotations

import datetime as dt

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import Max

from agents.models import Agent
from cindy_site.clock import now
from conversations.transport.base import (
    AccountInfo,
    HistoryPage,
    InboundMessage,
    LibraryRef,
    PermanentError,
    SentMessage,
    StickerRef,
    TransportError,
)
from sandbox.models import (
    SandboxChat,
    SandboxMember,
    SandboxMessage,
    SandboxTopic,
    SandboxUpdate,
    SandboxUser,
)
from sandbox.selectors import sandbox_dm_partner
from sandbox.services import chats as sandbox_services
from sandbox.services.library import sandbox_library_part
from sandbox.transport.account import SandboxAccount
from sandbox.transport.batch import SandboxBatch
from sandbox.transport.dialogs import SandboxDialogs
from sandbox.transport.media import SandboxMedia
from sandbox.transport.records import SandboxInbound
from sandbox.transport.updates import SandboxUpdates
from sandbox.transport.voice import SandboxVoice

#: How long a typing indicator shows without being renewed (Telegram: about 6 seconds).
TYPING_SECONDS = 6


class SandboxTransport(
    SandboxInbound, SandboxUpdates, SandboxDialogs, SandboxMedia, SandboxVoice, SandboxAccount, SandboxBatch
):
    def __init__(self, agent: Agent, *, gateway_id: str = "") -> None:
        self.agent = agent
        self.gateway_id = gateway_id
        self.me: SandboxUser | None = None
        self.cursor = 0
        self.seen: dict[int, dt.datetime] = {}
        self.connected = False
        self.dm_chat_ids: dict[int, int] = {}  # peer id → sandbox chat id, see `_chat_id_for_peer`

    # --- connection ---------------------------------------------------------------------------

    async def connect(self) -> AccountInfo:
        return await sync_to_async(self._connect)()

    def _connect(self) -> AccountInfo:
        self.me = sandbox_services.sandbox_user_for_agent(agent=self.agent)
        # Start at the current end of the log; the reconciler fetches whatever came before.
        self.cursor = SandboxUpdate.objects.aggregate(m=Max("id"))["m"] or 0
        # Everything up to the cursor counts as handled: history, not the stream, fills that gap.
        self.seen = dict(SandboxUpdate.objects.filter(self._window()).values_list("id", "created"))
        self.connected = True
        return AccountInfo(user_id=self.me.user_id, name=self.me.name, username=self.me.username)

    async def disconnect(self) -> None:
        self.connected = False

    def _require_me(self) -> SandboxUser:
        if self.me is None or not self.connected:
            raise TransportError(f"sandbox transport of {self.agent.name} is not connected: call connect()")
        return self.me

    # --- peers ----------------------------------------------------------------------------------

    def _my_chats(self):
        return SandboxChat.objects.filter(members=self._require_me())

    def _chat_for_peer(self, peer_id: int) -> SandboxChat:
        me = self._require_me()
        if peer_id < 0:
            chat = self._my_chats().filter(kind=SandboxChat.Kind.GROUP, peer_id=peer_id).first()
        elif peer_id in self.dm_chat_ids and (
            chat := SandboxChat.objects.filter(pk=self.dm_chat_ids[peer_id]).first()
        ):
            return chat  # the DM between two users, once it exists, stays the same chat
        else:
            other = SandboxUser.objects.filter(user_id=peer_id).first()
            if other is None:
                raise PermanentError("PEER_ID_INVALID", f"sandbox has no user {peer_id}")
            chat = sandbox_services.sandbox_dm_between(a=other, b=me)
            self.dm_chat_ids[peer_id] = chat.pk
        if chat is None:
            raise PermanentError("PEER_ID_INVALID", f"{self.agent.name} is not in sandbox chat {peer_id}")
        return chat

    def _chat_id_for_peer(self, peer_id: int) -> int:
        """`_chat_for_peer`'s id, remembered for DMs: the DM between two users, once it exists, stays
        the same chat (a group is looked up each time: the account may have left it)."""
        self._require_me()
        if peer_id > 0 and peer_id in self.dm_chat_ids:
            return self.dm_chat_ids[peer_id]
        return self._chat_for_peer(peer_id).pk

    def _partner_of(self, chat: SandboxChat) -> SandboxUser | None:
        """The other side of a DM (None in a group, or in the agent's chat with itself)."""
        if chat.kind == SandboxChat.Kind.GROUP:
            return None
        return sandbox_dm_partner(chat_id=chat.pk, me_id=self._require_me().pk)  # plain SQL

    def _peer_of(self, chat: SandboxChat) -> int:
        return self._peer_given(chat, self._partner_of(chat))

    def _peer_given(self, chat: SandboxChat, other: SandboxUser | None) -> int:
        """`_peer_of`, once the chat's `_partner_of` is known."""
        if chat.kind == SandboxChat.Kind.GROUP:
            return chat.peer_id
        return other.user_id if other else self._require_me().user_id

    async def history_page(self, peer_id: int, *, before_id: int = 0, limit: int = 100) -> HistoryPage:
        # The sandbox's chats live in this database: the mirror was never behind them.
        raise PermanentError(
            "BACKFILL_UNSUPPORTED",
            f"agent {self.agent.name} is a sandbox agent: backfill fetches a Telegram account's older "
            "history, and a sandbox chat's mirror holds all of it already",
        )

    async def history(
        self,
        peer_id: int,
        *,
        since_id: int | None = None,
        around_id: int | None = None,
        limit: int = 100,
        topic_id: int | None = None,
    ) -> list[InboundMessage]:
        return await sync_to_async(self._history)(peer_id, since_id, around_id, limit, topic_id)

    def _history(
        self,
        peer_id: int,
        since_id: int | None,
        around_id: int | None,
        limit: int,
        topic_id: int | None = None,
    ):
        chat_id = self._chat_id_for_peer(peer_id)
        qs = SandboxMessage.objects.filter(chat_id=chat_id, deleted=False).select_related("sender")
        if topic_id:
            qs = qs.filter(topic_id=topic_id)
        if since_id is not None:
            rows = list(qs.filter(message_id__gt=since_id).order_by("message_id")[:limit])
        elif around_id is not None:
            half = max(limit // 2, 1)
            before = list(qs.filter(message_id__lt=around_id).order_by("-message_id")[:half])
            after = list(qs.filter(message_id__gte=around_id).order_by("message_id")[: limit - len(before)])
            rows = [*reversed(before), *after]
        else:
            rows = list(reversed(qs.order_by("-message_id")[:limit]))
        if not rows:  # the usual answer before planning: the mirror is up to date
            return []
        return self._to_inbound(rows, SandboxChat.objects.get(pk=chat_id))

    # --- actions --------------------------------------------------------------------------------

    async def send_text(
        self,
        peer_id: int,
        text: str,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        return await sync_to_async(self._send)(peer_id, text, None, random_id, reply_to, topic_id)

    async def send_sticker(
        self,
        peer_id: int,
        sticker: StickerRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        part = {
            "kind": "media",
            "media_kind": "sticker",
            "sticker_set_name": sticker.set_short_name,
            "sticker_name": sticker.name,
            "unique_id": sticker.unique_id,
        }
        return await sync_to_async(self._send)(peer_id, "", [part], random_id, reply_to, topic_id)

    async def send_media(
        self,
        peer_id: int,
        item: LibraryRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        caption: str = "",
        topic_id: int | None = None,
    ) -> SentMessage:
        """The library file is shown in the chat like an uploaded photo (MEDIA_ROOT/sandbox/...)."""
        part = await sync_to_async(sandbox_library_part)(item)
        return await sync_to_async(self._send)(peer_id, caption, [part], random_id, reply_to, topic_id)

    def _send(self, peer_id, text, media, random_id, reply_to, topic_id=None) -> SentMessage:
        me = self._require_me()
        chat = self._chat_for_peer(peer_id)
        if topic_id and not SandboxTopic.objects.filter(chat=chat, topic_id=topic_id).exists():
            raise PermanentError("TOPIC_ID_INVALID", f"sandbox chat {peer_id} has no topic {topic_id}")
        if chat.kind == SandboxChat.Kind.DM:
            other = chat.members.exclude(pk=me.pk).first()
            if other is not None and me.user_id in (other.blocked_user_ids or []):
                raise PermanentError("USER_IS_BLOCKED", f"{other.name} has blocked {me.name}")
        elif refusal := self._write_refusal(chat):
            raise PermanentError("CHAT_WRITE_FORBIDDEN", f"{me.name} cannot write in {chat.title}: {refusal}")
        if (
            reply_to is not None
            and not SandboxMessage.objects.filter(chat=chat, message_id=reply_to).exists()
        ):
            reply_to = None  # Telegram sends without the reply when the target is gone
        message, _ = sandbox_services.sandbox_post(
            chat=chat,
            sender=me,
            text=text,
            media=media,
            reply_to=reply_to,
            random_id=random_id,
            topic_id=topic_id,
        )
        return SentMessage(
            peer_id=peer_id, message_id=message.message_id, date=message.date, random_id=random_id
        )

    async def react(self, peer_id: int, message_id: int, emoji: str) -> None:
        await sync_to_async(self._react)(peer_id, message_id, emoji)

    def _react(self, peer_id: int, message_id: int, emoji: str) -> None:
        chat = self._chat_for_peer(peer_id)
        message = SandboxMessage.objects.filter(chat=chat, message_id=message_id).first()
        if message is None:
            raise PermanentError("MESSAGE_ID_INVALID", f"no message {message_id} in sandbox chat {peer_id}")
        sandbox_services.sandbox_set_reaction(message=message, user=self._require_me(), emoji=emoji)

    async def mark_read(self, peer_id: int, max_id: int, *, topic_id: int | None = None) -> None:
        """The sandbox keeps one read mark per member and chat; a topic's read reads the chat up to it."""
        await sync_to_async(self._mark_read)(peer_id, max_id)

    def _mark_read(self, peer_id: int, max_id: int) -> None:
        me = self._require_me()
        chat_id = self._chat_id_for_peer(peer_id)
        with transaction.atomic():
            SandboxMember.objects.filter(chat_id=chat_id, user=me, read_up_to__lt=max_id).update(
                read_up_to=max_id
            )
            # Reading a chat clears its unread mark, as Cindy's Telegram transport does.
            SandboxMember.objects.filter(chat_id=chat_id, user=me, unread_mark=True).update(unread_mark=False)
            # Reading the chat also reads the reactions on the account's own messages.
            own = SandboxMessage.objects.filter(chat_id=chat_id, sender=me, message_id__lte=max_id)
            for pk, reactions in own.values_list("pk", "reactions"):
                if any(r.get("unread") for r in reactions):
                    SandboxMessage.objects.filter(pk=pk).update(
                        reactions=[{**r, "unread": False} for r in reactions]
                    )

    async def set_typing(self, peer_id: int, typing: bool = True, *, topic_id: int | None = None) -> None:
        """The sandbox shows typing per chat, whichever topic it is in."""
        await sync_to_async(self._set_typing)(peer_id, typing)

    def _set_typing(self, peer_id: int, typing: bool) -> None:
        me = self._require_me()
        chat = self._chat_for_peer(peer_id)
        until = now() + dt.timedelta(seconds=TYPING_SECONDS) if typing else None
        SandboxMember.objects.filter(chat=chat, user=me).update(typing_until=until)
        SandboxUpdate.objects.create(chat=chat, kind=SandboxUpdate.Kind.TYPING, actor=me, created=now())

    async def set_online(self, online: bool) -> None:
        await sync_to_async(self._set_online)(online)

    def _set_online(self, online: bool) -> None:
        SandboxUser.objects.filter(pk=self._require_me().pk).update(online=online)

    async def block(self, user_id: int) -> None:
        await sync_to_async(self._set_blocked)(user_id, True)

    async def unblock(self, user_id: int) -> None:
        await sync_to_async(self._set_blocked)(user_id, False)

    def _set_blocked(self, user_id: int, blocked: bool) -> None:
        with transaction.atomic():
            me = SandboxUser.objects.select_for_update().get(pk=self._require_me().pk)
            ids = [u for u in (me.blocked_user_ids or []) if u != user_id]
            if blocked:
                ids.append(user_id)
            me.blocked_user_ids = ids
            me.save(update_fields=["blocked_user_ids"])
            self.me = me

    async def delete_history(self, peer_id: int) -> None:
        await sync_to_async(self._delete_history)(peer_id)

    def _delete_history(self, peer_id: int) -> None:
        me = self._require_me()
        chat = self._chat_for_peer(peer_id)
        with transaction.atomic():
            ids = list(
                SandboxMessage.objects.filter(chat=chat, deleted=False).values_list("message_id", flat=True)
            )
            SandboxMessage.objects.filter(chat=chat, message_id__in=ids).update(deleted=True)
            SandboxUpdate.objects.bulk_create(
                SandboxUpdate(
                    chat=chat, kind=SandboxUpdate.Kind.DELETE, message_id=i, actor=me, created=now()
                )
                for i in ids
            )
