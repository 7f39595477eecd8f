"""`TelethonTransport`: the transport protocol on a real Telegram user account.

Sends are exactly-once: text and stickers go out through the raw `messages.SendMessage` /
`messages.SendMedia` requests carrying the caller's stored `random_id`. Telegram answers a repeated
random_id with the earlier message (or RANDOM_ID_DUPLICATE, in which case the earlier message is found
in the chat's recent history), so a send retried after a crash never produces a second message.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any

from telethon import errors, utils
from telethon.tl import functions, types

from cindy_site.clock import now
from conversations.transport.base import (
    ChatDetails,
    HistoryPage,
    InboundMessage,
    PermanentError,
    SentMessage,
    StickerRef,
    StickerSetInfo,
    TransportError,
)

from .account import TelethonAccount
from .client import TelethonConnection
from .errors import error_code
from .library import TelethonLibrary, media_of
from .markdown import to_entities
from .normalize import chat_kind_of, is_premium_sticker, peer_id_of, write_refusal
from .voice import TelethonVoice

DUPLICATE_LOOKBACK = 20
STALE_REFERENCE_CODES = frozenset(
    {"FILE_REFERENCE_EXPIRED", "FILE_REFERENCE_INVALID", "FILE_REFERENCE_EMPTY"}
)

logger = logging.getLogger(__name__)


def _stale_file_reference(exc: TransportError) -> bool:
    """Telegram refused a cached document's file reference; a fresh lookup of the document fixes it."""
    cause = exc.__cause__
    return isinstance(cause, errors.RPCError) and error_code(cause) in STALE_REFERENCE_CODES


def _reply(reply_to: int | None, topic_id: int | None = None):
    """The `reply_to` of a send: a reply to a message, and in a forum topic the topic (its top message
    id, which is also what a message that replies to nothing in the topic "replies" to)."""
    if topic_id:
        return types.InputReplyToMessage(reply_to_msg_id=reply_to or topic_id, top_msg_id=topic_id)
    return types.InputReplyToMessage(reply_to_msg_id=reply_to) if reply_to else None


def _is_muted(settings: types.PeerNotifySettings | None) -> bool:
    until = getattr(settings, "mute_until", None)
    return bool(until and until > now())


def _dialog_marks(dialog: types.Dialog, top_dates: dict[tuple[int, int], dt.datetime]) -> dict[str, Any]:
    """The reconciler's and the unread scan's marks: what the account has read (a first start answers
    only what is after it), the newest message and its date (a chat whose newest message is already
    stored needs no history), and what Telegram counts as unread (`ChatDetails`)."""
    return {
        "read_inbox_max_id": dialog.read_inbox_max_id,
        "top_message": dialog.top_message,
        "top_date": top_dates.get((peer_id_of(dialog.peer), dialog.top_message)),
        "unread_count": dialog.unread_count,
        "unread_mark": bool(dialog.unread_mark),
        "unread_mentions_count": dialog.unread_mentions_count or 0,
        "unread_reactions_count": dialog.unread_reactions_count or 0,
    }


class TelethonTransport(TelethonLibrary, TelethonVoice, TelethonAccount, TelethonConnection):
    """See the module docstring; connection and inbound plumbing live in `TelethonConnection`."""

    # --- sending ----------------------------------------------------------------------------------

    def _sent(self, result: Any, peer_id: int, random_id: int) -> SentMessage:
        """The message Telegram created for `random_id`, from a send request's result."""
        if isinstance(result, types.UpdateShortSentMessage):
            self._remember_own(peer_id, result.id)
            return SentMessage(peer_id=peer_id, message_id=result.id, date=result.date, random_id=random_id)
        updates = getattr(result, "updates", None) or []
        message_id = next(
            (u.id for u in updates if isinstance(u, types.UpdateMessageID) and u.random_id == random_id),
            None,
        )
        new = [
            u.message
            for u in updates
            if isinstance(u, (types.UpdateNewMessage, types.UpdateNewChannelMessage))
            and isinstance(u.message, types.Message)
        ]
        message = next((m for m in new if m.id == message_id), None)
        if message is None and message_id is None and len(new) == 1:
            message = new[0]
        if message is None and message_id is None:
            raise TransportError(
                f"agents/{self.agent.name}: Telegram's answer to a send names no message "
                f"({type(result).__name__})"
            )
        mid = message.id if message is not None else message_id
        date = message.date if message is not None else getattr(result, "date", None) or now()
        media = media_of(message) if message is not None else None
        self._remember_own(peer_id, mid)
        return SentMessage(
            peer_id=peer_id,
            message_id=mid,
            date=date,
            random_id=random_id,
            media_unique_id=media[0] if media else "",
        )

    async def _earlier_send(self, peer_id: int, random_id: int, matches) -> SentMessage:
        """RANDOM_ID_DUPLICATE: the message went out before; find it among the newest ones."""
        recent = await self._raw_history(peer_id, limit=DUPLICATE_LOOKBACK)
        for message in sorted(recent, key=lambda m: m.id, reverse=True):
            if isinstance(message, types.Message) and message.out and matches(message):
                self._remember_own(peer_id, message.id)
                return SentMessage(peer_id, message.id, message.date, random_id)
        raise PermanentError(
            "RANDOM_ID_DUPLICATE",
            f"agents/{self.agent.name}: Telegram says random_id {random_id} was already used in peer "
            f"{peer_id}, but no matching message is among its last {DUPLICATE_LOOKBACK} messages",
        )

    async def send_text(
        self,
        peer_id: int,
        text: str,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        plain, entities = to_entities(text)
        if not plain.strip():
            raise PermanentError("MESSAGE_EMPTY", "the message is empty once formatting is removed")

        def build(peer):
            return functions.messages.SendMessageRequest(
                peer=peer,
                message=plain,
                no_webpage=True,
                reply_to=_reply(reply_to, topic_id),
                random_id=random_id,
                entities=entities or None,
            )

        try:
            result = await self._peer_call(peer_id, build)
        except PermanentError as exc:
            if exc.reason != "RANDOM_ID_DUPLICATE":
                raise
            return await self._earlier_send(peer_id, random_id, lambda m: m.message == plain)
        return self._sent(result, peer_id, random_id)

    async def resolve_sticker_set(self, short_name: str) -> StickerSetInfo:
        cached = self._sticker_sets.get(short_name.lower())
        if cached is not None:
            return cached[0]
        result = await self._call(
            functions.messages.GetStickerSetRequest(
                stickerset=types.InputStickerSetShortName(short_name=short_name), hash=0
            )
        )
        docs: dict[str, types.Document] = {}
        refs = []
        for doc in result.documents:
            alt = next((a.alt for a in doc.attributes if isinstance(a, types.DocumentAttributeSticker)), "")
            docs.setdefault(alt, doc)
            docs[str(doc.id)] = doc
            refs.append(
                StickerRef(
                    set_short_name=result.set.short_name,
                    name=alt,
                    unique_id=str(doc.id),
                    ref={
                        "document_id": doc.id,
                        "mime": doc.mime_type or "",
                        "premium": is_premium_sticker(doc),
                    },
                )
            )
        info = StickerSetInfo(short_name=result.set.short_name, title=result.set.title, stickers=tuple(refs))
        self._sticker_sets.set(short_name.lower(), (info, docs))
        self._sticker_set_names[result.set.id] = (result.set.short_name, result.set.title)
        return info

    async def _sticker_document(self, sticker: StickerRef) -> types.Document:
        await self.resolve_sticker_set(sticker.set_short_name)
        _, docs = self._sticker_sets.get(sticker.set_short_name.lower())
        doc = docs.get(sticker.name) or docs.get(sticker.unique_id or "")
        if doc is None:
            raise PermanentError(
                "STICKER_NOT_FOUND",
                f"sticker set {sticker.set_short_name!r} has no sticker named {sticker.name!r}",
            )
        return doc

    def _forget_sticker_set(self, short_name: str) -> None:
        """Drop a cached set and its documents, so the next send looks them up with fresh file references."""
        self._sticker_sets.invalidate(short_name.lower())

    async def send_sticker(
        self,
        peer_id: int,
        sticker: StickerRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        # A cached document's file reference expires after a while (Telegram answers
        # FILE_REFERENCE_EXPIRED); the set is then fetched again and the send repeated once, with the
        # same random_id, so at most one message goes out.
        doc = await self._sticker_document(sticker)
        try:
            return await self._send_sticker_document(
                peer_id, doc, random_id=random_id, reply_to=reply_to, topic_id=topic_id
            )
        except TransportError as exc:
            if not _stale_file_reference(exc):
                raise
            self._forget_sticker_set(sticker.set_short_name)
            logger.info(
                "agents/%s: the file reference of a sticker from %r expired; fetching the set again",
                self.agent.name,
                sticker.set_short_name,
            )
        try:
            doc = await self._sticker_document(sticker)
            return await self._send_sticker_document(
                peer_id, doc, random_id=random_id, reply_to=reply_to, topic_id=topic_id
            )
        except TransportError as exc:
            if _stale_file_reference(exc):
                self._forget_sticker_set(sticker.set_short_name)  # the engine's retry looks it up again
            raise

    async def _send_sticker_document(
        self,
        peer_id: int,
        doc: types.Document,
        *,
        random_id: int,
        reply_to: int | None,
        topic_id: int | None = None,
    ) -> SentMessage:
        media = types.InputMediaDocument(
            id=types.InputDocument(id=doc.id, access_hash=doc.access_hash, file_reference=doc.file_reference)
        )
        return await self._send_input_media(
            peer_id,
            media,
            random_id=random_id,
            reply_to=reply_to,
            topic_id=topic_id,
            matches=lambda m: getattr(getattr(m.media, "document", None), "id", None) == doc.id,
        )

    async def _send_input_media(
        self,
        peer_id: int,
        media,
        *,
        random_id: int,
        reply_to: int | None,
        matches,
        caption: str = "",
        topic_id: int | None = None,
    ) -> SentMessage:
        """messages.sendMedia (`caption` as its text); on RANDOM_ID_DUPLICATE, the earlier message for
        which `matches` holds."""

        def build(peer):
            return functions.messages.SendMediaRequest(
                peer=peer,
                media=media,
                message=caption,
                random_id=random_id,
                reply_to=_reply(reply_to, topic_id),
            )

        try:
            result = await self._peer_call(peer_id, build)
        except PermanentError as exc:
            if exc.reason != "RANDOM_ID_DUPLICATE":
                raise
            return await self._earlier_send(peer_id, random_id, matches)
        return self._sent(result, peer_id, random_id)

    # --- other actions ----------------------------------------------------------------------------

    async def react(self, peer_id: int, message_id: int, emoji: str) -> None:
        reaction = [types.ReactionEmoji(emoticon=emoji)] if emoji else []
        await self._peer_call(
            peer_id,
            lambda peer: functions.messages.SendReactionRequest(
                peer=peer, msg_id=message_id, reaction=reaction
            ),
        )

    async def mark_read(self, peer_id: int, max_id: int, *, topic_id: int | None = None) -> None:
        def build(peer):
            if topic_id:  # a forum topic has a read mark of its own
                return functions.messages.ReadDiscussionRequest(
                    peer=peer, msg_id=topic_id, read_max_id=max_id
                )
            if isinstance(peer, types.InputPeerChannel):
                return functions.channels.ReadHistoryRequest(
                    channel=utils.get_input_channel(peer), max_id=max_id
                )
            return functions.messages.ReadHistoryRequest(peer=peer, max_id=max_id)

        await self._peer_call(peer_id, build)
        # Reactions read too, so an answered reaction does not count as unread again.
        await self._peer_call(
            peer_id,
            lambda peer: functions.messages.ReadReactionsRequest(peer=peer, top_msg_id=topic_id or None),
        )
        # Mentions and an unread mark are cleared as Telegram's apps do on opening the chat (only
        # where the account saw them: two requests fewer for every other chat).
        if peer_id in self._unread_mentions:
            await self._peer_call(peer_id, lambda peer: functions.messages.ReadMentionsRequest(peer=peer))
            self._unread_mentions.discard(peer_id)
        if peer_id in self._marked_unread:
            await self._peer_call(
                peer_id,
                lambda peer: functions.messages.MarkDialogUnreadRequest(
                    peer=types.InputDialogPeer(peer=peer), unread=False
                ),
            )
            self._marked_unread.discard(peer_id)

    async def set_typing(self, peer_id: int, typing: bool = True, *, topic_id: int | None = None) -> None:
        action = types.SendMessageTypingAction() if typing else types.SendMessageCancelAction()
        await self._peer_call(
            peer_id,
            lambda peer: functions.messages.SetTypingRequest(
                peer=peer, action=action, top_msg_id=topic_id or None
            ),
        )

    async def set_online(self, online: bool) -> None:
        await self._call(functions.account.UpdateStatusRequest(offline=not online))

    async def block(self, user_id: int) -> None:
        await self._peer_call(user_id, lambda peer: functions.contacts.BlockRequest(id=peer))
        cached = self._blocklist.get("all")
        if cached is not None:
            self._blocklist.set("all", cached | {user_id})

    async def unblock(self, user_id: int) -> None:
        await self._peer_call(user_id, lambda peer: functions.contacts.UnblockRequest(id=peer))
        cached = self._blocklist.get("all")
        if cached is not None:
            self._blocklist.set("all", cached - {user_id})

    async def delete_history(self, peer_id: int) -> None:
        if peer_id <= 0:
            raise PermanentError(
                "NOT_A_DM",
                f"delete history is only done in private chats; peer {peer_id} is a group or channel",
            )
        for _ in range(100):  # Telegram deletes in batches and reports what is left in `offset`
            result = await self._peer_call(
                peer_id,
                lambda peer: functions.messages.DeleteHistoryRequest(
                    peer=peer, max_id=0, just_clear=False, revoke=False
                ),
            )
            if not getattr(result, "offset", 0):
                return

    # --- reading ----------------------------------------------------------------------------------

    async def _raw_history(
        self, peer_id: int, *, since_id=None, around_id=None, limit=100, topic_id: int | None = None
    ) -> list:
        if since_id is not None:
            # The `limit` messages right after since_id, so a reconciler pages forward without gaps.
            offset_id, add_offset, min_id = since_id + 1, -limit, since_id
        elif around_id is not None:
            offset_id, add_offset, min_id = around_id, -(limit // 2), 0
        else:
            offset_id, add_offset, min_id = 0, 0, 0
        page = {
            "offset_id": offset_id,
            "offset_date": None,
            "add_offset": add_offset,
            "limit": limit,
            "max_id": 0,
            "min_id": min_id,
            "hash": 0,
        }

        def build(peer):
            if topic_id:  # a forum topic's messages: the "replies" to its top message
                return functions.messages.GetRepliesRequest(peer=peer, msg_id=topic_id, **page)
            return functions.messages.GetHistoryRequest(peer=peer, **page)

        result = await self._peer_call(peer_id, build)
        self._remember_entities([*getattr(result, "users", []), *getattr(result, "chats", [])])
        return list(getattr(result, "messages", []))

    async def history(
        self,
        peer_id: int,
        *,
        since_id: int | None = None,
        around_id: int | None = None,
        limit: int = 100,
        topic_id: int | None = None,
    ) -> list[InboundMessage]:
        raw = await self._raw_history(
            peer_id, since_id=since_id, around_id=around_id, limit=limit, topic_id=topic_id
        )
        messages = await self._normalise_messages(raw)
        if since_id is not None:
            messages = [m for m in messages if m.message_id > since_id]
        return sorted(messages, key=lambda m: m.message_id)

    async def history_page(self, peer_id: int, *, before_id: int = 0, limit: int = 100) -> HistoryPage:
        # messages.getHistory from offset_id: the `limit` messages before it, newest first.
        page = {"offset_id": before_id, "offset_date": None, "add_offset": 0, "limit": limit}
        result = await self._peer_call(
            peer_id,
            lambda peer: functions.messages.GetHistoryRequest(peer=peer, **page, max_id=0, min_id=0, hash=0),
        )
        self._remember_entities([*getattr(result, "users", []), *getattr(result, "chats", [])])
        raw = list(getattr(result, "messages", []))
        oldest = min(raw, key=lambda m: m.id, default=None)
        messages = await self._normalise_messages(raw)
        return HistoryPage(
            messages=sorted(messages, key=lambda m: m.message_id),
            count=len(raw),
            oldest_id=oldest.id if oldest is not None else None,
            oldest_date=getattr(oldest, "date", None),
        )

    def _details(self, peer, notify=None, **fields) -> ChatDetails:
        pid = peer_id_of(peer)
        entity = self._entities.get(pid)
        kind = chat_kind_of(peer, self._entities)
        title = utils.get_display_name(entity) if entity is not None else ""
        muted = _is_muted(notify)
        if notify is not None:
            self._muted.set(pid, muted)
        return ChatDetails(
            peer_id=pid,
            kind=kind,
            title=title,
            username=getattr(entity, "username", None) or "",
            muted=muted,
            cannot_write="" if kind == "dm" else write_refusal(entity),
            **fields,
        )

    async def dialogs(self, *, limit: int = 100) -> list[ChatDetails]:
        result = await self._call(
            functions.messages.GetDialogsRequest(
                offset_date=None, offset_id=0, offset_peer=types.InputPeerEmpty(), limit=limit, hash=0
            )
        )
        self._remember_entities([*result.users, *result.chats])
        top_dates = {
            (peer_id_of(m.peer_id), m.id): m.date
            for m in result.messages
            if isinstance(m, types.Message | types.MessageService) and m.date is not None
        }
        found = [
            self._details(d.peer, d.notify_settings, extra=_dialog_marks(d, top_dates))
            for d in result.dialogs
            if isinstance(d, types.Dialog)
        ]
        for details in found:
            marked, mentioned = details.extra["unread_mark"], details.extra["unread_mentions_count"] > 0
            (self._marked_unread.add if marked else self._marked_unread.discard)(details.peer_id)
            (self._unread_mentions.add if mentioned else self._unread_mentions.discard)(details.peer_id)
        return found

    async def get_details(self, peer_id: int) -> ChatDetails:
        peer = await self._input_peer(peer_id)
        if isinstance(peer, types.InputPeerUser):
            full = await self._call(functions.users.GetFullUserRequest(id=peer), peer_id=peer_id)
            self._remember_entities(full.users)
            info = full.full_user
            return self._details(
                types.PeerUser(peer.user_id),
                info.notify_settings,
                about=info.about or "",
                blocked=bool(info.blocked),
            )
        if isinstance(peer, types.InputPeerChat):
            full = await self._call(
                functions.messages.GetFullChatRequest(chat_id=peer.chat_id), peer_id=peer_id
            )
        else:
            full = await self._call(
                functions.channels.GetFullChannelRequest(channel=utils.get_input_channel(peer)),
                peer_id=peer_id,
            )
        self._remember_entities([*full.users, *full.chats])
        info = full.full_chat
        names = tuple(utils.get_display_name(u) for u in full.users if isinstance(u, types.User))
        count = getattr(info, "participants_count", None)
        if count is None:
            count = len(getattr(getattr(info, "participants", None), "participants", []) or []) or None
        return self._details(
            utils.get_peer(peer_id),
            info.notify_settings,
            about=info.about or "",
            participants_count=count,
            participants=names[:50],
        )

    async def is_muted(self, peer_id: int) -> bool:
        cached = self._muted.get(peer_id)
        if cached is not None:
            return cached
        settings = await self._peer_call(
            peer_id,
            lambda peer: functions.account.GetNotifySettingsRequest(peer=types.InputNotifyPeer(peer=peer)),
        )
        return self._muted.set(peer_id, _is_muted(settings))

    async def is_blocked(self, user_id: int) -> bool:
        blocked = self._blocklist.get("all")
        if blocked is None:
            ids: set[int] = set()
            offset = 0
            while True:
                page = await self._call(functions.contacts.GetBlockedRequest(offset=offset, limit=100))
                ids.update(peer_id_of(b.peer_id) for b in page.blocked)
                offset += len(page.blocked)
                total = getattr(page, "count", None)
                if not page.blocked or total is None or offset >= total:
                    break
            blocked = self._blocklist.set("all", frozenset(ids))
        return user_id in blocked

    async def download_media(self, peer_id: int, message_id: int, dest_dir: Path) -> Path | None:
        def build(peer):
            ids = [types.InputMessageID(id=message_id)]
            if isinstance(peer, types.InputPeerChannel):
                return functions.channels.GetMessagesRequest(channel=utils.get_input_channel(peer), id=ids)
            return functions.messages.GetMessagesRequest(id=ids)

        result = await self._peer_call(peer_id, build)
        message = next((m for m in result.messages if isinstance(m, types.Message)), None)
        if message is None or message.media is None:
            return None
        media = message.media
        file_id = getattr(getattr(media, "document", None) or getattr(media, "photo", None), "id", message_id)
        dest_dir = Path(dest_dir)
        dest_dir.mkdir(parents=True, exist_ok=True)
        target = dest_dir / f"{file_id}{utils.get_extension(media)}"
        self._check_pause(peer_id)
        client = self._require_client()
        saved = await self._guard(client.download_media(message, file=str(target)), peer_id=peer_id)
        return Path(saved) if saved else None
