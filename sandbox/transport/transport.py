"""SandboxTransport: the transport protocol over the sandbox tables, as one agent's account sees them.

Peer ids follow Telegram: in a DM the peer is the other user's id, in a group it is the (negative) group
id. The update stream is the `SandboxUpdate` log read after a cursor; like Telegram's pts, a gap left
while disconnected is filled by the engine's reconciler from `history(since_id=...)`.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.db.models import Max, Q

from agents.models import Agent
from cindy_site.bulk import placeholders
from cindy_site.clock import now
from cindy_site.prepared import PreparedRead
from conversations.transport.base import (
    WRITE_REFUSALS,
    AccountInfo,
    ChatDetails,
    DialogUnreadMark,
    InboundMessage,
    LibraryRef,
    LibrarySave,
    MediaItem,
    MessageEdited,
    MessagesDeleted,
    NewMessage,
    PartnerTyping,
    PermanentError,
    ReactionInfo,
    ReactionsChanged,
    SentMessage,
    StickerRef,
    StickerSetInfo,
    TransportError,
    Update,
)
from sandbox.models import (
    SandboxChat,
    SandboxMember,
    SandboxMessage,
    SandboxTopic,
    SandboxUpdate,
    SandboxUser,
)
from sandbox.services import chats as sandbox_services
from sandbox.services.library import sandbox_library_part
from sandbox.transport.account import SandboxAccount
from sandbox.transport.batch import SandboxBatch
from sandbox.transport.voice import SandboxVoice

#: How long a typing indicator shows without being renewed (Telegram: about 6 seconds).
TYPING_SECONDS = 6
POLL_BATCH = 500
#: The trailing window the update poll re-reads (see `_poll_updates`).
TRAILING_IDS = 1000
TRAILING_SECONDS = 10
MAX_SEEN = 5000
#: The dialog list counts unread mentions and reactions among a chat's newest this many messages.
MARKS_WINDOW = 200


class SandboxTransport(SandboxVoice, SandboxAccount, SandboxBatch):
    #: What `with_updates` last read when it found every transport quiet (see there).
    _quiet_after: tuple | None = None

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
        return _dm_partner.first(chat.pk, self._require_me().pk)

    def _peer_of(self, chat: SandboxChat) -> int:
        return self._peer_given(chat, self._partner_of(chat))

    def _peer_given(self, chat: SandboxChat, other: SandboxUser | None) -> int:
        """`_peer_of`, once the chat's `_partner_of` is known."""
        if chat.kind == SandboxChat.Kind.GROUP:
            return chat.peer_id
        return other.user_id if other else self._require_me().user_id

    # --- converting to plain records ------------------------------------------------------------

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
                    reactions=_reactions(m.reactions),
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

    # --- the update stream ----------------------------------------------------------------------

    async def poll_updates(self) -> list[Update]:
        return await sync_to_async(self._poll_updates)()

    def _window(self) -> Q:
        """The trailing window the poll re-reads: the last TRAILING_IDS ids and TRAILING_SECONDS."""
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        return Q(id__gt=max(self.cursor - TRAILING_IDS, 0)) | Q(created__gte=recent)

    @classmethod
    def with_updates(cls, transports: list[SandboxTransport]) -> set[SandboxTransport]:
        """Which connected transports have something for `poll_updates`: one query for all of them.

        The same test as the poll (a row in the transport's window, in one of its chats, not its own
        typing, not seen yet), over the union of the windows, so a gateway's idle pass polls nobody. A
        subclass with a poll of its own, or a transport not connected, is always named: its poll
        decides.
        """
        plain = SandboxTransport.poll_updates
        ready: set[SandboxTransport] = set()
        live: list[SandboxTransport] = []
        stamps: list[tuple[int, int, int]] = []  # each live transport's (identity, cursor, ids seen)
        for t in transports:  # one pass: a gateway asks this of every agent at every pass
            if t.connected and t.me is not None and type(t).poll_updates is plain:
                live.append(t)
                stamps.append((id(t), t.cursor, len(t.seen)))
            else:
                ready.add(t)
        if not live:
            return ready
        recent = connection.ops.adapt_datetimefield_value(now() - dt.timedelta(seconds=TRAILING_SECONDS))
        floor = max(min(stamp[1] for stamp in stamps) - TRAILING_IDS, 0)
        q = connection.ops.quote_name
        updates, members = q(SandboxUpdate._meta.db_table), q(SandboxMember._meta.db_table)
        window = "(u.id > %s OR u.created >= %s)"
        # The window's row count and newest id, with the transports' cursors: when none of these moved
        # since a read that found every transport quiet, they are all quiet still (a row committed
        # late, with a lower id, changes the count; rows leaving the window only make fewer ready).
        # Plain SQL, as the read below: a gateway asks this at every pass, for every sandbox agent.
        key = (tuple(stamps), floor)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*), MAX(u.id) FROM {updates} u WHERE {window}", [floor, recent])  # noqa: S608
            stamp = tuple(cursor.fetchone())
            if cls._quiet_after == (key, stamp):
                return ready
            by_me: dict[int, list[SandboxTransport]] = {}
            for transport in live:
                by_me.setdefault(transport.me.pk, []).append(transport)
            # The window's rows, then their chats' members among these accounts: two reads that each
            # follow an index (the window's through the id and `created` indexes), where one join
            # walked every update of every chat the accounts are in.
            cursor.execute(
                f"SELECT u.id, u.chat_id, u.kind, u.actor_id, CASE WHEN u.created >= %s THEN 1 ELSE 0 END "  # noqa: S608
                f"FROM {updates} u WHERE {window}",
                [recent, floor, recent],
            )
            window_rows = cursor.fetchall()
            chats = sorted({row[1] for row in window_rows})
            members_of: dict[int, list[int]] = {}
            if chats:
                cursor.execute(
                    f"SELECT chat_id, user_id FROM {members} WHERE chat_id IN ({placeholders(len(chats))}) "  # noqa: S608
                    f"AND user_id IN ({placeholders(len(by_me))})",
                    [*chats, *by_me],
                )
                for chat_id, user_id in cursor.fetchall():
                    members_of.setdefault(chat_id, []).append(user_id)
        rows = [
            (row_id, member_id, kind, actor_id, is_recent)
            for row_id, chat_id, kind, actor_id, is_recent in window_rows
            for member_id in members_of.get(chat_id, ())
        ]
        found = False
        for row_id, member_id, kind, actor_id, is_recent in rows:
            if kind == SandboxUpdate.Kind.TYPING and actor_id == member_id:
                continue  # one's own typing is no update for oneself
            if kind == SandboxUpdate.Kind.UNREAD_MARK and actor_id != member_id:
                continue  # an unread mark is the marking account's alone
            for transport in by_me[member_id]:
                if transport in ready or row_id in transport.seen:
                    continue
                if row_id > max(transport.cursor - TRAILING_IDS, 0) or is_recent:
                    ready.add(transport)
                    found = True
        cls._quiet_after = None if found else (key, stamp)
        return ready

    def _poll_updates(self) -> list[Update]:
        """Updates after the cursor, plus a re-read of a trailing window.

        On MariaDB an id becomes visible when its transaction commits, so a row with a lower id can
        appear after a higher one was read: reading strictly after the cursor would skip it forever.
        The window is read again and rows already handled are dropped by id (`self.seen` maps the ids
        still inside the window to their time, so it stays bounded).
        """
        me = self._require_me()
        # The read is a prepared statement (cindy_site/prepared.py) per step of SEEN_STEP ids already
        # seen: it reads at least POLL_BATCH rows not seen yet, when there are as many.
        steps = -(-len(self.seen) // SEEN_STEP)
        read = _update_reads.get(steps)
        if read is None:
            read = _update_reads[steps] = _updates_read(POLL_BATCH + steps * SEEN_STEP)
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        # The window's ids first: most of them were seen by an earlier poll, and only the rest are
        # read as rows (with their chats).
        ids = read.all(me.pk, max(self.cursor - TRAILING_IDS, 0), recent)
        fresh = [i for i in ids if i not in self.seen][:POLL_BATCH]
        if not fresh:
            return []
        rows = _updates_by_id.all(fresh)
        if not rows:  # removed meanwhile (retention)
            return []
        self.cursor = max(self.cursor, rows[-1].id)
        self.seen.update((row.id, row.created) for row in rows)
        floor = max(self.cursor - TRAILING_IDS, 0)
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        self.seen = {i: t for i, t in self.seen.items() if i > floor or t >= recent}
        if len(self.seen) > MAX_SEEN:  # a flood inside the time window: keep the newest ids
            self.seen = dict(sorted(self.seen.items())[-MAX_SEEN:])
        updates: list[Update] = []
        for row in rows:
            if row.kind == SandboxUpdate.Kind.TYPING:
                typing = self._partner_typing(row, me)
                if typing is not None:
                    updates.append(typing)
                continue
            if row.kind == SandboxUpdate.Kind.UNREAD_MARK:
                marked = SandboxMember.objects.filter(chat=row.chat, user=me, unread_mark=True).exists()
                updates.append(DialogUnreadMark(peer_id=self._peer_of(row.chat), unread=marked))
                continue
            message = (
                _message_with_sender.first(row.chat_id, row.message_id)
                if row.message_id is not None
                else None
            )
            if message is None:
                continue
            if row.kind == SandboxUpdate.Kind.DELETE or message.deleted:
                updates.append(
                    MessagesDeleted(peer_id=self._peer_of(row.chat), message_ids=(row.message_id,))
                )
            elif row.kind == SandboxUpdate.Kind.NEW_MESSAGE:
                updates.append(NewMessage(self._to_inbound([message], row.chat)[0]))
            elif row.kind == SandboxUpdate.Kind.EDIT:
                updates.append(MessageEdited(self._to_inbound([message], row.chat)[0]))
            elif row.kind == SandboxUpdate.Kind.REACTION:
                reactions = _reactions(message.reactions)
                unread = message.sender_id == me.pk and any(r.unread for r in reactions)
                updates.append(
                    ReactionsChanged(
                        peer_id=self._peer_of(row.chat),
                        message_id=row.message_id,
                        reactions=reactions,
                        unread=unread,
                    )
                )
        return updates

    def _partner_typing(self, row: SandboxUpdate, me: SandboxUser) -> PartnerTyping | None:
        """A person's typing in a DM with the agent, for as long as their member row says."""
        if row.chat.kind != SandboxChat.Kind.DM:
            return None
        until = (
            SandboxMember.objects.filter(chat=row.chat, user_id=row.actor_id)
            .values_list("typing_until", flat=True)
            .first()
        )
        seconds = max((until - now()).total_seconds(), 0.0) if until else 0.0
        return PartnerTyping(peer_id=self._peer_of(row.chat), seconds=seconds)

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

    async def saved_media(self, *, limit: int = 200) -> list[LibraryRef]:
        """The stickers the account keeps in its Saved Messages (its DM with itself, see
        `sandbox_save`); the rest of the sandbox library is the admin's uploads (LibraryItem)."""
        return await sync_to_async(self._saved_media)(limit)

    def _saved_media(self, limit: int) -> list[LibraryRef]:
        me = self._require_me()
        chat = sandbox_services.sandbox_saved_chat(user=me)
        if chat is None:
            return []
        items = []
        for message in SandboxMessage.objects.filter(chat=chat, deleted=False).order_by("-message_id")[
            :limit
        ]:
            for part in message.media or []:
                if part.get("media_kind") == "sticker" and part.get("unique_id"):
                    items.append(
                        LibraryRef(
                            str(part["unique_id"]),
                            "sticker",
                            saved_message_id=message.message_id,
                            mime=str(part.get("mime") or ""),
                            sticker_set_name=str(part.get("sticker_set_name") or ""),
                            sticker_name=str(part.get("sticker_name") or ""),
                        )
                    )
        return items

    async def save_to_library(self, peer_id: int, message_id: int, unique_id: str) -> LibrarySave:
        """The message's media item is posted to the account's Saved Messages (its DM with itself)."""
        return await sync_to_async(self._save_to_library)(peer_id, message_id, unique_id)

    def _save_to_library(self, peer_id: int, message_id: int, unique_id: str) -> LibrarySave:
        me = self._require_me()
        message = SandboxMessage.objects.filter(
            chat=self._chat_for_peer(peer_id), message_id=message_id
        ).first()
        if message is None:
            raise PermanentError("MESSAGE_ID_INVALID", f"sandbox chat {peer_id} has no message {message_id}")
        part = next((p for p in message.media or [] if str(p.get("unique_id", "")) == unique_id), None)
        if part is None:
            raise PermanentError(
                "MEDIA_NOT_FOUND",
                f"message {message_id} of sandbox chat {peer_id} does not hold media {unique_id}",
            )
        chat = sandbox_services.sandbox_saved_chat(user=me)
        for saved in SandboxMessage.objects.filter(chat=chat, deleted=False) if chat else []:
            if any(str(p.get("unique_id", "")) == unique_id for p in saved.media or []):
                ref = LibraryRef(
                    unique_id, str(part.get("media_kind", "")), saved_message_id=saved.message_id
                )
                return LibrarySave(ref, already=True)
        saved = sandbox_services.sandbox_save(agent=self.agent, media=[dict(part)])
        mime = str(part.get("mime") or "")
        ref = LibraryRef(
            unique_id, str(part.get("media_kind", "")), saved_message_id=saved.message_id, mime=mime
        )
        return LibrarySave(ref)

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

    async def download_media(self, peer_id: int, message_id: int, dest_dir: Path) -> Path | None:
        return await sync_to_async(self._download_media)(peer_id, message_id, dest_dir)

    def _download_media(self, peer_id: int, message_id: int, dest_dir: Path) -> Path | None:
        chat = self._chat_for_peer(peer_id)
        message = SandboxMessage.objects.filter(chat=chat, message_id=message_id).first()
        if message is None:
            return None
        for part in message.media:
            source = Path(part.get("extra", {}).get("path", "") or part.get("path", ""))
            if source.is_file():
                dest_dir.mkdir(parents=True, exist_ok=True)
                target = dest_dir / f"{part.get('unique_id') or message_id}{source.suffix}"
                shutil.copyfile(source, target)
                return target
        return None

    async def resolve_sticker_set(self, short_name: str) -> StickerSetInfo:
        return await sync_to_async(self._resolve_sticker_set)(short_name)

    def _resolve_sticker_set(self, short_name: str) -> StickerSetInfo:
        from media_catalog.models import StickerSet

        sticker_set = StickerSet.objects.filter(short_name=short_name).first()
        if sticker_set is None:
            return self._sticker_set_from_descriptions(short_name)
        stickers = tuple(
            StickerRef(
                set_short_name=short_name,
                name=s.name,
                unique_id=s.unique_id,
                ref={"format": s.format, "mime": s.mime, "premium": s.premium},
            )
            for s in sticker_set.stickers.all()
        )
        return StickerSetInfo(short_name=short_name, title=sticker_set.title, stickers=stickers)

    @staticmethod
    def _sticker_set_from_descriptions(short_name: str) -> StickerSetInfo:
        """The sandbox's "Telegram" also knows every set that curated sticker descriptions name, so a
        persona's stickers work in the sandbox before any set was imported from Telegram."""
        from media_catalog.models import STICKER_KINDS, MediaDescription

        described = list(
            MediaDescription.objects.filter(kind__in=STICKER_KINDS, sticker_set_name=short_name)
            .exclude(sticker_name="")
            .order_by("unique_id")
        )
        if not described:
            raise PermanentError("STICKERSET_INVALID", f"the sandbox knows no sticker set {short_name!r}")
        title = next((d.sticker_set_title for d in described if d.sticker_set_title), short_name)
        stickers = tuple(
            StickerRef(
                set_short_name=short_name, name=d.sticker_name, unique_id=d.unique_id, ref={"mime": d.mime}
            )
            for d in described
        )
        return StickerSetInfo(short_name=short_name, title=title, stickers=stickers)

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


def _reactions(raw: list[dict[str, Any]]) -> tuple[ReactionInfo, ...]:
    return tuple(
        ReactionInfo(
            emoji=r["emoji"],
            count=int(r.get("count", 1)),
            user_ids=tuple(r.get("user_ids", [])),
            unread=bool(r.get("unread", False)),
        )
        for r in raw
    )


# --- prepared statements (cindy_site/prepared.py): the reads of every polled update ----------------

#: The poll's rows are read in steps of this many ids already seen (see `_poll_updates`).
SEEN_STEP = 500


def _updates_read(limit: int) -> PreparedRead:
    """The poll's read: the ids of the window's updates in the account's chats, at most `limit`, oldest
    first; not its own typing, and no other account's unread mark."""
    return PreparedRead(
        lambda me, floor, recent: SandboxUpdate.objects.filter(
            Q(id__gt=floor) | Q(created__gte=recent), chat__members=me
        )
        .exclude(kind=SandboxUpdate.Kind.TYPING, actor_id=me)
        .exclude(Q(kind=SandboxUpdate.Kind.UNREAD_MARK) & ~Q(actor_id=me))
        .order_by("id")
        .values_list("id", flat=True)[:limit],
        int,
        int,
        dt.datetime,
    )


_update_reads: dict[int, PreparedRead] = {}
#: The poll's new updates, with their chats, oldest first.
_updates_by_id = PreparedRead(
    lambda ids: SandboxUpdate.objects.filter(id__in=ids).select_related("chat").order_by("id"), list[int]
)
_message_with_sender = PreparedRead(
    lambda chat_id, message_id: SandboxMessage.objects.filter(chat_id=chat_id, message_id=message_id)
    .select_related("sender")
    .order_by()[:1],
    int,
    int,
)
_dm_partner = PreparedRead(
    lambda chat_id, me: SandboxUser.objects.filter(chats=chat_id).exclude(pk=me).order_by("name", "pk")[:1],
    int,
    int,
)
