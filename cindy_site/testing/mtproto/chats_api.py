"""The stand-in's chat methods: update state and difference, dialogs, history, sends, files."""

from __future__ import annotations

import io
import time
from typing import TYPE_CHECKING, Any

from PIL import Image
from telethon.tl import functions, types

from .context import Endpoint
from .media import add_photo
from .presence_api import write_refused
from .rpc import RpcFail, handles
from .world import CHANNEL, CHAT, DM

if TYPE_CHECKING:
    from .world import Message, World

DIFFERENCE_LIMIT = 1000


class ChatsApi:
    world: World
    server: Endpoint

    def _me(self, conn) -> int:
        if conn.user_id is None:
            raise RpcFail(401, "AUTH_KEY_UNREGISTERED")
        return conn.user_id

    def _notify(self, me: int, key: tuple) -> types.PeerNotifySettings:
        until = self.world.users[me].muted_until.get(key)
        return types.PeerNotifySettings(mute_until=until if until and until > time.time() else None)

    # --- update state -----------------------------------------------------------------------------

    def _state(self, me: int) -> types.updates.State:
        return types.updates.State(
            pts=self.world.users[me].pts, qts=0, date=int(time.time()), seq=0, unread_count=0
        )

    @handles(functions.updates.GetStateRequest)
    def get_state(self, conn, request):
        return self._state(self._me(conn))

    def _changes(self, me: int, log: list, since: int, keys_of) -> tuple[list, list, set]:
        """New messages and other updates after pts `since`, as `me` sees them now."""
        messages, others, keys = [], [], set()
        for pts, kind, data in log:
            if pts <= since:
                continue
            key = keys_of(data)
            keys.add(key)
            if kind == "new":
                if not data.deleted:
                    messages.append(self.world.tl_message(data, me))
            else:
                others.append(self.world.tl_update(key, kind, data, pts, me))
        return messages[:DIFFERENCE_LIMIT], others, keys

    @handles(functions.updates.GetDifferenceRequest)
    def get_difference(self, conn, request):
        me = self._me(conn)
        user = self.world.users[me]
        messages, others, keys = self._changes(
            me, user.log, request.pts, lambda d: d.key if hasattr(d, "key") else self._key_of_ids(me, d)
        )
        if not messages and not others:
            return types.updates.DifferenceEmpty(date=int(time.time()), seq=0)
        users, chats = self.world.extras(keys, me)
        return types.updates.Difference(
            new_messages=messages,
            new_encrypted_messages=[],
            other_updates=others,
            chats=chats,
            users=users,
            state=self._state(me),
        )

    def _key_of_ids(self, me: int, data: Any) -> tuple:
        if isinstance(data, tuple) and isinstance(data[0], tuple):  # a read event: (key, max_id)
            return data[0]
        return (DM, me, me)  # deletions name no chat

    @handles(functions.updates.GetChannelDifferenceRequest)
    def get_channel_difference(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, request.channel)
        chat = self.world.chats[key[1]]
        messages, others, _ = self._changes(me, chat.log, request.pts, lambda d: key)
        if not messages and not others:
            return types.updates.ChannelDifferenceEmpty(pts=chat.pts, final=True)
        users, chats = self.world.extras({key}, me)
        return types.updates.ChannelDifference(
            pts=chat.pts, new_messages=messages, other_updates=others, chats=chats, users=users, final=True
        )

    # --- dialogs and chats ------------------------------------------------------------------------

    @handles(functions.messages.GetDialogsRequest)
    def get_dialogs(self, conn, request):
        me = self._me(conn)
        dialogs, tops = [], []
        for key in self.world.dialog_keys(me):
            history = self.world.history(key)
            top = history[-1] if history else None
            dialogs.append(
                (
                    top.date if top else 0,
                    types.Dialog(
                        peer=self.world.peer_of(key, me),
                        top_message=top.id if top else 0,
                        read_inbox_max_id=self.world.users[me].read_max.get(key, 0),
                        read_outbox_max_id=0,
                        unread_count=self.world.unread(me, key),
                        unread_mentions_count=self.world.unread_mentions(me, key),
                        unread_reactions_count=self.world.unread_reactions(me, key),
                        unread_poll_votes_count=0,
                        unread_mark=self.world.users[me].unread_mark.get(key) or None,
                        notify_settings=self._notify(me, key),
                        pts=self.world.chats[key[1]].pts if key[0] == CHANNEL else None,
                    ),
                )
            )
            if top is not None:
                tops.append(self.world.tl_message(top, me))
        dialogs.sort(key=lambda d: -d[0])
        keys = set(self.world.dialog_keys(me))
        users, chats = self.world.extras(keys, me)
        return types.messages.Dialogs(
            dialogs=[d for _, d in dialogs][: request.limit], messages=tops, chats=chats, users=users
        )

    @handles(functions.messages.GetFullChatRequest)
    def get_full_chat(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, types.PeerChat(request.chat_id))
        chat = self.world.chats[key[1]]
        participants = types.ChatParticipants(
            chat_id=chat.id,
            participants=[
                types.ChatParticipant(user_id=u, inviter_id=me, date=0) for u in sorted(chat.members)
            ],
            version=1,
        )
        full = types.ChatFull(
            id=chat.id, about=chat.about, participants=participants, notify_settings=self._notify(me, key)
        )
        users, chats = self.world.extras({key}, me)
        return types.messages.ChatFull(full_chat=full, chats=chats, users=users)

    @handles(functions.channels.GetFullChannelRequest)
    def get_full_channel(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, request.channel)
        chat = self.world.chats[key[1]]
        full = types.ChannelFull(
            id=chat.id,
            about=chat.about,
            read_inbox_max_id=self.world.users[me].read_max.get(key, 0),
            read_outbox_max_id=0,
            unread_count=self.world.unread(me, key),
            chat_photo=types.PhotoEmpty(0),
            notify_settings=self._notify(me, key),
            bot_info=[],
            pts=chat.pts,
            participants_count=len(chat.members),
        )
        users, chats = self.world.extras({key}, me)
        return types.messages.ChatFull(full_chat=full, chats=chats, users=users)

    # --- reading ----------------------------------------------------------------------------------

    def _messages_result(self, me: int, key: tuple, found: list[Message], count: int | None = None):
        users, chats = self.world.extras({key}, me)
        tl = [self.world.tl_message(m, me) for m in found]
        if key[0] == CHANNEL:
            return types.messages.ChannelMessages(
                pts=self.world.chats[key[1]].pts,
                count=count if count is not None else len(tl),
                messages=tl,
                topics=[],
                chats=chats,
                users=users,
            )
        return types.messages.Messages(messages=tl, topics=[], chats=chats, users=users)

    @handles(functions.messages.GetHistoryRequest)
    def get_history(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, request.peer)
        newest_first = sorted(self.world.history(key), key=lambda m: -m.id)
        if request.offset_id:
            start = next(
                (i for i, m in enumerate(newest_first) if m.id < request.offset_id), len(newest_first)
            )
        else:
            start = 0
        start = max(0, start + request.add_offset)
        page = newest_first[start : start + request.limit]
        page = [m for m in page if m.id > request.min_id and (not request.max_id or m.id < request.max_id)]
        return self._messages_result(me, key, page, len(newest_first))

    @handles(functions.messages.GetMessagesRequest, functions.channels.GetMessagesRequest)
    def get_messages(self, conn, request):
        me = self._me(conn)
        ids = {getattr(i, "id", None) for i in request.id}
        if isinstance(request, functions.channels.GetMessagesRequest):
            keys = [self.world.key_for(me, request.channel)]
        else:
            keys = [k for k in self.world.dialog_keys(me) if k[0] != CHANNEL]
        found = [m for k in keys for m in self.world.history(k) if m.id in ids]
        users, chats = self.world.extras({m.key for m in found}, me)
        return types.messages.Messages(
            messages=[self.world.tl_message(m, me) for m in found], topics=[], chats=chats, users=users
        )

    @handles(functions.messages.ReadHistoryRequest, functions.channels.ReadHistoryRequest)
    def read_history(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, getattr(request, "peer", None) or request.channel)
        pts = self.world.read(me, key, request.max_id)
        if key[0] == CHANNEL:
            return True
        return types.messages.AffectedMessages(pts=pts, pts_count=1)

    @handles(functions.messages.ReadReactionsRequest)
    def read_reactions(self, conn, request):
        me = self._me(conn)
        self.world.read_reactions(me, self.world.key_for(me, request.peer))
        return types.messages.AffectedHistory(pts=self.world.users[me].pts, pts_count=0, offset=0)

    @handles(functions.messages.ReadMentionsRequest)
    def read_mentions(self, conn, request):
        me = self._me(conn)
        self.world.read_mentions(me, self.world.key_for(me, request.peer))
        return types.messages.AffectedHistory(pts=self.world.users[me].pts, pts_count=0, offset=0)

    @handles(functions.messages.MarkDialogUnreadRequest)
    def mark_dialog_unread(self, conn, request):
        me = self._me(conn)
        if not isinstance(request.peer, types.InputDialogPeer):
            raise RpcFail(400, "PEER_ID_INVALID")
        self.world.mark_unread(
            me, self.world.key_for(me, request.peer.peer), bool(request.unread), push=False
        )
        return True

    @handles(functions.messages.SetTypingRequest)
    def set_typing(self, conn, request):
        self.world.key_for(self._me(conn), request.peer)
        return True

    # --- sending ----------------------------------------------------------------------------------

    def _sent(self, me: int, message: Message) -> types.Updates:
        key = message.key
        tl = self.world.tl_message(message, me)
        if key[0] == CHANNEL:
            new = types.UpdateNewChannelMessage(message=tl, pts=message.pts, pts_count=1)
        else:
            new = types.UpdateNewMessage(message=tl, pts=message.pts, pts_count=1)
        users, chats = self.world.extras({key}, me)
        return types.Updates(
            updates=[types.UpdateMessageID(id=message.id, random_id=message.random_id), new],
            users=users,
            chats=chats,
            date=message.date,
            seq=0,
        )

    def _send(self, conn, request, text: str, media: Any = None) -> types.Updates:
        me = self._me(conn)
        key = self.world.key_for(me, request.peer)
        if key[0] == DM and (key[1] if key[2] == me else key[2]) in self.world.users[me].blocked:
            raise RpcFail(400, "YOU_BLOCKED_USER")
        if key[0] != DM and (refused := write_refused(self.world.chats[key[1]], me)) is not None:
            raise refused
        reply = getattr(request.reply_to, "reply_to_msg_id", None)
        topic = self.world.topic_of_reply(key, reply, getattr(request.reply_to, "top_msg_id", None))
        if topic is not None and reply == topic:
            reply = None  # posted in the topic, replying to no message of it
        if not text.strip() and media is None:
            raise RpcFail(400, "MESSAGE_EMPTY")
        message, _pts, new = self.world.send(
            me,
            key,
            text,
            random_id=request.random_id,
            reply_to=reply,
            media=media,
            entities=list(request.entities or []),
            skip_push=me,
            topic=topic,
        )
        if not new and self.server.random_id_duplicate_error:
            raise RpcFail(400, "RANDOM_ID_DUPLICATE")
        return self._sent(me, message)

    @handles(functions.messages.SendMessageRequest)
    def send_message(self, conn, request):
        return self._send(conn, request, request.message)

    @handles(functions.messages.SendMediaRequest)
    def send_media(self, conn, request):
        media = request.media
        if isinstance(media, types.InputMediaDocument):
            doc = self.world.documents.get(media.id.id)
            if doc is None or doc.access_hash != media.id.access_hash:
                raise RpcFail(400, "MEDIA_INVALID")
            if media.id.file_reference != doc.file_reference:
                raise RpcFail(400, "FILE_REFERENCE_EXPIRED")
            return self._send(conn, request, request.message, types.MessageMediaDocument(document=doc))
        if isinstance(media, types.InputMediaPhoto):
            photo = self.world.photos.get(media.id.id)
            if photo is None or photo.access_hash != media.id.access_hash:
                raise RpcFail(400, "MEDIA_INVALID")
            if media.id.file_reference != photo.file_reference:
                raise RpcFail(400, "FILE_REFERENCE_EXPIRED")
            return self._send(conn, request, request.message, types.MessageMediaPhoto(photo=photo))
        if isinstance(media, types.InputMediaUploadedPhoto):
            data = self._uploaded(conn, media.file)
            try:
                with Image.open(io.BytesIO(data)) as image:
                    width, height = image.size
            except OSError as exc:
                raise RpcFail(400, "IMAGE_PROCESS_FAILED") from exc
            photo = add_photo(self.world, data, width=width, height=height)
            return self._send(conn, request, request.message, types.MessageMediaPhoto(photo=photo))
        if isinstance(media, types.InputMediaUploadedDocument):
            data = self._uploaded(conn, media.file)
            doc = types.Document(
                id=self.world.new_id(),
                access_hash=self.world.new_id(),
                file_reference=b"ref-1",
                date=int(time.time()),
                mime_type=media.mime_type,
                size=len(data),
                dc_id=self.world.dc_id,
                attributes=list(media.attributes),
            )
            self.world.documents[doc.id], self.world.files[doc.id] = doc, data
            return self._send(conn, request, request.message, types.MessageMediaDocument(document=doc))
        raise RpcFail(400, "MEDIA_INVALID")

    @handles(functions.upload.SaveFilePartRequest)
    def save_file_part(self, conn, request):
        me = self._me(conn)
        self.world.uploads.setdefault((me, request.file_id), {})[request.file_part] = request.bytes
        return True

    def _uploaded(self, conn, file) -> bytes:
        """The bytes of a file the client uploaded in parts (upload.saveFilePart), as Telegram joins them."""
        parts = self.world.uploads.pop((self._me(conn), file.id), None)
        if not parts or len(parts) != file.parts:
            raise RpcFail(400, "FILE_PARTS_INVALID")
        return b"".join(parts[i] for i in range(file.parts))

    @handles(functions.messages.SendReactionRequest)
    def send_reaction(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, request.peer)
        emoji = next((r.emoticon for r in request.reaction or [] if isinstance(r, types.ReactionEmoji)), "")
        message = self.world.react(me, key, request.msg_id, emoji)
        users, chats = self.world.extras({key}, me)
        update = types.UpdateMessageReactions(
            peer=self.world.peer_of(key, me),
            msg_id=message.id,
            reactions=self.world.tl_message(message, me).reactions or types.MessageReactions(results=[]),
        )
        return types.Updates(updates=[update], users=users, chats=chats, date=int(time.time()), seq=0)

    @handles(functions.messages.DeleteHistoryRequest)
    def delete_history(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, request.peer)
        if key[0] == CHAT or key[0] == CHANNEL:
            raise RpcFail(400, "PEER_ID_INVALID")
        self.world.delete(me, key, [m.id for m in self.world.history(key)])
        return types.messages.AffectedHistory(pts=self.world.users[me].pts, pts_count=0, offset=0)

    # --- stickers and files -----------------------------------------------------------------------

    @handles(functions.messages.GetStickerSetRequest)
    def get_sticker_set(self, conn, request):
        self._me(conn)
        wanted = request.stickerset
        for sticker_set, docs in self.world.sticker_sets.values():
            if (
                isinstance(wanted, types.InputStickerSetShortName)
                and wanted.short_name.lower() == sticker_set.short_name.lower()
            ) or (isinstance(wanted, types.InputStickerSetID) and wanted.id == sticker_set.id):
                packs = {}
                for doc in docs:
                    alt = next(a.alt for a in doc.attributes if isinstance(a, types.DocumentAttributeSticker))
                    packs.setdefault(alt, []).append(doc.id)
                return types.messages.StickerSet(
                    set=sticker_set,
                    packs=[types.StickerPack(emoticon=e, documents=ids) for e, ids in packs.items()],
                    keywords=[],
                    documents=docs,
                )
        raise RpcFail(400, "STICKERSET_INVALID")

    @handles(functions.upload.GetFileRequest)
    def get_file(self, conn, request):
        self._me(conn)
        location = request.location
        data = self.world.files.get(getattr(location, "id", None))
        if data is None:
            raise RpcFail(400, "LOCATION_INVALID")
        chunk = data[request.offset : request.offset + request.limit]
        return types.upload.File(type=types.storage.FilePartial(), mtime=int(time.time()), bytes=chunk)
