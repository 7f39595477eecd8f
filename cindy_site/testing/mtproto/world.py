"""The stand-in's Telegram: users, chats, messages and each account's update log.

Simplifications, all invisible to a client that follows the protocol:
- private chats and basic groups share one message-id sequence (ids rise for every account, with gaps
  instead of a per-account sequence); each supergroup has its own sequence and pts, as on Telegram;
- each account has one common-box pts (`pts_count` 1 per event), and qts stays 0 (no secret chats);
- a number that signs in for the first time is registered at once (no auth.signUp step).
Every mutation runs on the server's event loop; `push` delivers an account's live updates.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from telethon.tl import types

from .presence_api import chat_rights, user_status
from .rpc import RpcFail

DM, CHAT, CHANNEL = "dm", "chat", "channel"


class WorldError(Exception):
    """A scripted action names something that does not exist; the message says what."""


@dataclass
class User:
    id: int
    phone: str
    first_name: str
    username: str = ""
    password: str | None = None
    access_hash: int = 0
    bot: bool = False  # a bot account (Telegram's `bot` flag on the user)
    premium: bool = False  # Telegram Premium (`User.premium`): premium stickers may be sent
    blocked: set[int] = field(default_factory=set)  # users this account has blocked
    pts: int = 1
    log: list[tuple[int, str, Any]] = field(default_factory=list)  # (pts, kind, data)
    read_max: dict[tuple, int] = field(default_factory=dict)  # dialog key -> read_inbox_max_id
    muted_until: dict[tuple, int] = field(default_factory=dict)
    unread_mark: dict[tuple, bool] = field(default_factory=dict)  # dialog key -> marked unread
    mentions_read: dict[tuple, int] = field(default_factory=dict)  # dialog key -> mentions read up to
    contacts: set[int] = field(default_factory=set)  # users this account added to its contacts
    online: bool | None = None  # as account.updateStatus last set it (None: never set)
    status_at: int = 0  # when it was last set


@dataclass
class Chat:
    id: int
    kind: str  # CHAT or CHANNEL
    title: str
    members: set[int]
    access_hash: int = 0
    about: str = ""
    pts: int = 1
    next_id: int = 1
    log: list[tuple[int, str, Any]] = field(default_factory=list)
    forum: bool = False  # a supergroup with topics (Telegram's `Channel.forum`)
    topics: dict[int, str] = field(default_factory=dict)  # topic id (its creation message's id) -> title
    # Who may write (presence_api.py): a broadcast channel lets only its admins post; a restricted
    # group none of its members but admins; `restricted` members may read but not write; `banned` ones
    # may do neither.
    broadcast: bool = False
    members_write: bool = True
    admins: set[int] = field(default_factory=set)
    restricted: set[int] = field(default_factory=set)
    banned: set[int] = field(default_factory=set)


@dataclass
class Message:
    id: int
    key: tuple  # (DM, low user, high user) | (CHAT, id) | (CHANNEL, id)
    sender: int
    text: str
    date: int
    random_id: int | None = None
    reply_to: int | None = None
    media: Any = None  # a TL MessageMedia
    mentions: tuple[int, ...] = ()
    entities: list = field(default_factory=list)
    reactions: dict[int, str] = field(default_factory=dict)  # user id -> emoji
    edit_date: int | None = None
    deleted: bool = False
    pts: int = 0  # the sender's pts after the send
    reactions_unread: set[int] = field(default_factory=set)  # reacting users the author has not read
    topic: int | None = None  # in a forum: the topic's id (None: the General topic)
    action: Any = None  # a service message's TL MessageAction (e.g. MessageActionTopicCreate)


class World:
    def __init__(self, *, push: Callable[[int, Any], None] | None = None, dc_id: int = 2) -> None:
        self.dc_id = dc_id
        self.push = push or (lambda user_id, updates: None)
        self.users: dict[int, User] = {}
        self.chats: dict[int, Chat] = {}
        self.messages: dict[tuple, list[Message]] = {}
        self.by_random_id: dict[tuple[int, int], Message] = {}
        self._ids = itertools.count(1000)
        self._common_msg_id = itertools.count(1)
        self.files: dict[int, bytes] = {}  # photo or document id -> content
        self.photos: dict[int, types.Photo] = {}
        self.uploads: dict[tuple[int, int], dict[int, bytes]] = {}  # (user, file id) -> part -> bytes
        self.documents: dict[int, types.Document] = {}
        self.sticker_sets: dict[str, tuple[types.StickerSet, list[types.Document]]] = {}

    # --- accounts and chats -----------------------------------------------------------------------

    def new_id(self) -> int:
        return next(self._ids)

    def create_user(
        self,
        *,
        phone: str,
        first_name: str,
        username: str = "",
        password: str | None = None,
        user_id: int | None = None,
        bot: bool = False,
    ) -> User:
        """A new account; `user_id` fixes its id (777000 is Telegram's service account), `bot` makes it
        a bot."""
        phone = phone.lstrip("+")
        if self.user_by_phone(phone) is not None:
            raise WorldError(f"a user with phone +{phone} exists already")
        if user_id is not None and user_id in self.users:
            raise WorldError(f"a user with id {user_id} exists already")
        new_id = self.new_id() if user_id is None else int(user_id)
        user = User(new_id, phone, first_name, username, password, access_hash=self.new_id() * 7919, bot=bot)
        self.users[user.id] = user
        return user

    def user_by_phone(self, phone: str) -> User | None:
        phone = phone.lstrip("+")
        return next((u for u in self.users.values() if u.phone == phone), None)

    def user(self, user_id: int) -> User:
        try:
            return self.users[int(user_id)]
        except KeyError:
            raise WorldError(f"no user with id {user_id}; create it first") from None

    def chat(self, chat_id: int) -> Chat:
        try:
            return self.chats[int(chat_id)]
        except KeyError:
            raise WorldError(f"no group with id {chat_id}; create it first") from None

    def create_group(
        self, *, title: str, member_ids: list[int], supergroup: bool = False, forum: bool = False
    ) -> Chat:
        """A basic group, a supergroup, or (`forum`) a supergroup with topics."""
        for uid in member_ids:
            self.user(uid)
        chat = Chat(
            self.new_id(),
            CHANNEL if supergroup or forum else CHAT,
            title,
            set(member_ids),
            self.new_id() * 104729,
            forum=forum,
        )
        self.chats[chat.id] = chat
        return chat

    def create_topic(self, creator: int, chat_id: int, title: str) -> Message:
        """`creator` opens a topic in a forum: a service message (MessageActionTopicCreate) whose id
        becomes the topic's id, delivered to every member like any new message."""
        chat = self.chat(chat_id)
        if not chat.forum:
            raise WorldError(f"group {chat_id} is not a forum: create it with forum = true")
        if creator not in chat.members:
            raise WorldError(f"user {creator} is not a member of group {chat_id}")
        message, _pts, _new = self.send(
            creator, (CHANNEL, chat.id), "", action=types.MessageActionTopicCreate(title=title, icon_color=0)
        )
        return message

    def topic_of_reply(self, key: tuple, reply_to: int | None, top: int | None) -> int | None:
        """The topic a message sent in a forum goes to: the `top_msg_id` it names, else the topic of
        the message it replies to (or the topic it names by replying to its id); None: General."""
        chat = self.chats.get(key[1]) if key[0] == CHANNEL else None
        if chat is None or not chat.forum:
            return None
        if top:
            if top not in chat.topics:
                raise RpcFail(400, "TOPIC_ID_INVALID")
            return top
        if reply_to in chat.topics:
            return reply_to
        replied = self.find(key, reply_to) if reply_to else None
        return replied.topic if replied is not None else None

    # --- keys and peers ---------------------------------------------------------------------------

    def dm_key(self, a: int, b: int) -> tuple:
        return (DM, min(a, b), max(a, b))

    def key_for(self, viewer: int, peer: Any) -> tuple:
        """The dialog key of an InputPeer / Peer as seen by `viewer`; raises PEER_ID_INVALID."""
        if (
            isinstance(peer, (types.InputPeerUser, types.PeerUser, types.InputUser))
            and peer.user_id in self.users
        ):
            return self.dm_key(viewer, peer.user_id)
        if isinstance(peer, (types.InputPeerSelf, types.InputUserSelf)):
            return self.dm_key(viewer, viewer)
        if isinstance(peer, (types.InputPeerChat, types.PeerChat)) and peer.chat_id in self.chats:
            if viewer in self.chats[peer.chat_id].members:
                return (CHAT, peer.chat_id)
        if isinstance(peer, (types.InputPeerChannel, types.PeerChannel, types.InputChannel)):
            chat = self.chats.get(peer.channel_id)
            if chat is not None and viewer in chat.members:
                return (CHANNEL, peer.channel_id)
        raise RpcFail(400, "PEER_ID_INVALID")

    def members(self, key: tuple) -> set[int]:
        return {key[1], key[2]} if key[0] == DM else self.chats[key[1]].members

    def peer_of(self, key: tuple, viewer: int):
        if key[0] == DM:
            return types.PeerUser(key[2] if key[1] == viewer else key[1])
        return types.PeerChat(key[1]) if key[0] == CHAT else types.PeerChannel(key[1])

    # --- TL views ---------------------------------------------------------------------------------

    def tl_user(self, user_id: int, viewer: int) -> types.User:
        u = self.users[user_id]
        return types.User(
            id=u.id,
            is_self=u.id == viewer,
            access_hash=u.access_hash,
            first_name=u.first_name,
            username=u.username or None,
            phone=u.phone if u.id == viewer else None,
            contact=u.id in self.users[viewer].contacts,
            bot=u.bot,
            bot_info_version=1 if u.bot else None,
            premium=u.premium,
            status=user_status(u),
        )

    def tl_chat(self, chat_id: int, viewer: int | None = None):
        c = self.chats[chat_id]
        rights = chat_rights(c, viewer)
        if c.kind == CHAT:
            return types.Chat(
                id=c.id,
                title=c.title,
                photo=types.ChatPhotoEmpty(),
                participants_count=len(c.members),
                date=None,
                version=1,
                **rights,
            )
        return types.Channel(
            id=c.id,
            title=c.title,
            photo=types.ChatPhotoEmpty(),
            date=None,
            access_hash=c.access_hash,
            megagroup=not c.broadcast,
            broadcast=c.broadcast,
            forum=c.forum or None,
            **rights,
        )

    def tl_reply_header(self, m: Message) -> types.MessageReplyHeader | None:
        """As Telegram marks it: in a forum topic every message "replies" to the topic (`forum_topic`,
        `reply_to_msg_id` the topic's id), and a reply to another message of the topic names that
        message with the topic as `reply_to_top_id`."""
        if m.topic is not None and m.id != m.topic:
            if m.reply_to and m.reply_to != m.topic:
                return types.MessageReplyHeader(
                    forum_topic=True, reply_to_msg_id=m.reply_to, reply_to_top_id=m.topic
                )
            return types.MessageReplyHeader(forum_topic=True, reply_to_msg_id=m.topic)
        return types.MessageReplyHeader(reply_to_msg_id=m.reply_to) if m.reply_to else None

    def tl_message(self, m: Message, viewer: int) -> types.Message:
        out = m.sender == viewer
        if m.action is not None:
            return types.MessageService(
                id=m.id,
                peer_id=self.peer_of(m.key, viewer),
                date=m.date,
                out=out,
                from_id=types.PeerUser(m.sender),
                reply_to=self.tl_reply_header(m),
                action=m.action,
            )
        replied = self.find(m.key, m.reply_to) if m.reply_to else None
        results: dict[str, int] = {}
        for emoji in m.reactions.values():
            results[emoji] = results.get(emoji, 0) + 1
        reactions = None
        if m.reactions:
            reactions = types.MessageReactions(
                results=[
                    types.ReactionCount(reaction=types.ReactionEmoji(e), count=n) for e, n in results.items()
                ],
                recent_reactions=[
                    types.MessagePeerReaction(
                        peer_id=types.PeerUser(uid),
                        date=m.edit_date or m.date,
                        reaction=types.ReactionEmoji(e),
                        unread=m.sender == viewer and uid in m.reactions_unread,
                        my=uid == viewer,
                    )
                    for uid, e in m.reactions.items()
                ],
            )
        return types.Message(
            id=m.id,
            peer_id=self.peer_of(m.key, viewer),
            date=m.date,
            message=m.text,
            out=out,
            mentioned=not out
            and (viewer in m.mentions or (replied is not None and replied.sender == viewer)),
            from_id=types.PeerUser(m.sender) if (m.key[0] != DM or out) else None,
            reply_to=self.tl_reply_header(m),
            media=m.media,
            entities=m.entities or None,
            reactions=reactions,
            edit_date=m.edit_date,
        )

    def extras(self, keys: set[tuple], viewer: int, user_ids: set[int] = frozenset()) -> tuple[list, list]:
        """The users and chats a result mentions: what the client must know to read it."""
        uids, cids = {viewer, *user_ids}, set()
        for key in keys:
            if key[0] == DM:
                uids |= {key[1], key[2]}
            else:
                cids.add(key[1])
                uids |= self.chats[key[1]].members
        return [self.tl_user(u, viewer) for u in sorted(uids)], [
            self.tl_chat(c, viewer) for c in sorted(cids)
        ]

    def find(self, key: tuple, msg_id: int | None) -> Message | None:
        return next((m for m in self.messages.get(key, []) if m.id == msg_id and not m.deleted), None)

    def history(self, key: tuple) -> list[Message]:
        return [m for m in self.messages.get(key, []) if not m.deleted]

    # --- events -----------------------------------------------------------------------------------

    def _log(self, key: tuple, kind: str, data: Any, members: set[int] | None = None) -> dict[int, int]:
        """Record an event in the logs of everyone who sees it; returns each member's new pts."""
        if key[0] == CHANNEL:
            chat = self.chats[key[1]]
            chat.pts += 1
            chat.log.append((chat.pts, kind, data))
            return {uid: chat.pts for uid in chat.members}
        out = {}
        for uid in self.members(key) if members is None else members:
            user = self.users[uid]
            user.pts += 1
            user.log.append((user.pts, kind, data))
            out[uid] = user.pts
        return out

    def tl_update(self, key: tuple, kind: str, data: Any, pts: int, viewer: int):
        if kind == "new":
            cls = types.UpdateNewChannelMessage if key[0] == CHANNEL else types.UpdateNewMessage
            return cls(message=self.tl_message(data, viewer), pts=pts, pts_count=1)
        if kind == "edit":
            cls = types.UpdateEditChannelMessage if key[0] == CHANNEL else types.UpdateEditMessage
            return cls(message=self.tl_message(data, viewer), pts=pts, pts_count=1)
        if kind == "delete":
            if key[0] == CHANNEL:
                return types.UpdateDeleteChannelMessages(
                    channel_id=key[1], messages=data, pts=pts, pts_count=1
                )
            return types.UpdateDeleteMessages(messages=data, pts=pts, pts_count=1)
        if kind == "read":
            peer_key, max_id = data
            return types.UpdateReadHistoryInbox(
                peer=self.peer_of(peer_key, viewer), max_id=max_id, still_unread_count=0, pts=pts, pts_count=1
            )
        raise WorldError(f"unknown event kind {kind}")

    def _deliver(
        self, key: tuple, kind: str, data: Any, pts: dict[int, int], *, skip: int | None = None
    ) -> None:
        for uid, user_pts in pts.items():
            if uid == skip:
                continue
            users, chats = self.extras({key}, uid)
            update = self.tl_update(key, kind, data, user_pts, uid)
            self.push(
                uid, types.Updates(updates=[update], users=users, chats=chats, date=int(time.time()), seq=0)
            )

    def send(
        self,
        sender: int,
        key: tuple,
        text: str,
        *,
        random_id: int | None = None,
        reply_to: int | None = None,
        media: Any = None,
        mentions: tuple[int, ...] = (),
        entities: list | None = None,
        skip_push: int | None = None,
        topic: int | None = None,
        action: Any = None,
        date: int | None = None,
    ) -> tuple[Message, dict[int, int], bool]:
        """A new message (or, for a random_id already used by `sender` here, the first one and False);
        in a forum, in `topic` (None: General); `action` makes it a service message; `date` (Unix
        seconds, default now) sends it as if in the past, for history that predates a test's agent."""
        if random_id is not None:
            earlier = self.by_random_id.get((sender, random_id))
            if earlier is not None:
                return earlier, {}, False
        if key[0] == CHANNEL:
            chat = self.chats[key[1]]
            msg_id, chat.next_id = chat.next_id, chat.next_id + 1
        else:
            msg_id = next(self._common_msg_id)
        if entities is None and not mentions:  # the server finds @username mentions in plain text
            entities, mentions = self._text_mentions(text)
        message = Message(
            msg_id,
            key,
            sender,
            text,
            int(time.time()) if date is None else date,
            random_id,
            reply_to,
            media,
            mentions,
            entities or [],
        )
        if isinstance(action, types.MessageActionTopicCreate):
            self.chats[key[1]].topics[msg_id] = action.title
            topic = msg_id
        message.topic, message.action = topic, action
        self.messages.setdefault(key, []).append(message)
        if random_id is not None:
            self.by_random_id[(sender, random_id)] = message
        members = self.members(key)
        if key[0] == DM:  # a user who blocked the sender never receives the message
            members = {uid for uid in members if uid == sender or sender not in self.users[uid].blocked}
        pts = self._log(key, "new", message, members)
        message.pts = pts.get(sender, 0)
        self._deliver(key, "new", message, pts, skip=skip_push)
        return message, pts, True

    def _text_mentions(self, text: str) -> tuple[list, tuple[int, ...]]:
        """The `MessageEntityMention`s of the @usernames of known users in `text`, and their ids."""
        entities, mentioned = [], []
        by_name = {u.username.lower(): u.id for u in self.users.values() if u.username}
        for found in re.finditer(r"@([A-Za-z][A-Za-z0-9_]{2,31})", text):
            uid = by_name.get(found.group(1).lower())
            if uid is not None:
                start = len(text[: found.start()].encode("utf-16-le")) // 2
                length = len(found.group(0).encode("utf-16-le")) // 2
                entities.append(types.MessageEntityMention(offset=start, length=length))
                mentioned.append(uid)
        return entities, tuple(mentioned)

    def reserve_ids(self, count: int) -> list[int]:
        """`count` new message ids for `add_history`, taken now (e.g. for an export written first)."""
        return [next(self._common_msg_id) for _ in range(count)]

    def add_history(
        self, key: tuple, past: list[tuple[int, str, int]], ids: list[int] | None = None
    ) -> list[int]:
        """A DM's past, (sender, text, Unix date) oldest first, from before anyone's session: stored with
        new ids (or `ids` from `reserve_ids`) and read by both sides, but logged as no update, so a
        client learns of it only by reading the history. Returns the messages' ids."""
        ids = ids or self.reserve_ids(len(past))
        for msg_id, (sender, text, date) in zip(ids, past, strict=True):
            self.messages.setdefault(key, []).append(Message(msg_id, key, sender, text, date))
        self.messages[key].sort(key=lambda m: m.id)
        for uid in self.members(key):
            self.users[uid].read_max[key] = max(self.users[uid].read_max.get(key, 0), *ids)
        return ids

    # --- attention: what messages.getDialogs counts as unread ---------------------------------------

    def mark_unread(self, user_id: int, key: tuple, unread: bool = True, *, push: bool = True) -> None:
        """`user_id` marks the dialog unread (or clears the mark), e.g. from their phone: their other
        sessions get `UpdateDialogUnreadMark` (`push`)."""
        self.users[user_id].unread_mark[key] = unread
        if push:
            update = types.UpdateDialogUnreadMark(
                peer=types.DialogPeer(peer=self.peer_of(key, user_id)), unread=unread or None
            )
            users, chats = self.extras({key}, user_id)
            self.push(
                user_id,
                types.Updates(updates=[update], users=users, chats=chats, date=int(time.time()), seq=0),
            )

    def _mentions_viewer(self, m: Message, viewer: int) -> bool:
        replied = self.find(m.key, m.reply_to) if m.reply_to else None
        return m.sender != viewer and (
            viewer in m.mentions or (replied is not None and replied.sender == viewer)
        )

    def unread_mentions(self, viewer: int, key: tuple) -> int:
        read = self.users[viewer].mentions_read.get(key, 0)
        return sum(1 for m in self.history(key) if m.id > read and self._mentions_viewer(m, viewer))

    def read_mentions(self, viewer: int, key: tuple) -> None:
        history = self.history(key)
        if history:
            self.users[viewer].mentions_read[key] = history[-1].id

    def unread_reactions(self, viewer: int, key: tuple) -> int:
        return sum(1 for m in self.history(key) if m.sender == viewer and m.reactions_unread)

    def read_reactions(self, viewer: int, key: tuple) -> None:
        for m in self.history(key):
            if m.sender == viewer:
                m.reactions_unread.clear()

    def typing(self, user_id: int, key: tuple, *, cancel: bool = False) -> None:
        """`user_id` types in a DM (or stops: `cancel`): the other side gets `UpdateUserTyping`, which
        Telegram's clients take to last about 6 seconds unless renewed."""
        if key[0] != DM:
            raise WorldError(f"typing is pushed in DMs only, not in {key}")
        action = types.SendMessageCancelAction() if cancel else types.SendMessageTypingAction()
        for uid in self.members(key) - {user_id}:
            if user_id in self.users[uid].blocked:
                continue
            users, chats = self.extras({key}, uid)
            update = types.UpdateUserTyping(user_id=user_id, action=action)
            self.push(
                uid, types.Updates(updates=[update], users=users, chats=chats, date=int(time.time()), seq=0)
            )

    def edit(self, user_id: int, key: tuple, msg_id: int, text: str) -> Message:
        message = self.find(key, msg_id)
        if message is None or message.sender != user_id:
            raise WorldError(f"user {user_id} has no message {msg_id} to edit in {key}")
        message.text, message.edit_date = text, int(time.time())
        self._deliver(key, "edit", message, self._log(key, "edit", message))
        return message

    def delete(self, user_id: int, key: tuple, msg_ids: list[int]) -> None:
        found = [m for m in self.history(key) if m.id in msg_ids]
        for message in found:
            message.deleted = True
        if found:
            ids = [m.id for m in found]
            self._deliver(key, "delete", ids, self._log(key, "delete", ids))

    def react(self, user_id: int, key: tuple, msg_id: int, emoji: str) -> Message:
        message = self.find(key, msg_id)
        if message is None:
            raise RpcFail(400, "MESSAGE_ID_INVALID")
        if emoji:
            message.reactions[user_id] = emoji
            if message.sender != user_id:
                message.reactions_unread.add(user_id)
        else:
            message.reactions.pop(user_id, None)
            message.reactions_unread.discard(user_id)
        for uid in self.members(key):
            if uid == user_id:
                continue
            update = types.UpdateMessageReactions(
                peer=self.peer_of(key, uid),
                msg_id=msg_id,
                reactions=self.tl_message(message, uid).reactions or types.MessageReactions(results=[]),
            )
            users, chats = self.extras({key}, uid)
            self.push(
                uid, types.Updates(updates=[update], users=users, chats=chats, date=int(time.time()), seq=0)
            )
        return message

    def read(self, viewer: int, key: tuple, max_id: int) -> int:
        user = self.users[viewer]
        user.read_max[key] = max(user.read_max.get(key, 0), max_id)
        if key[0] == CHANNEL:
            return 0
        return self._log(key, "read", (key, user.read_max[key]), {viewer})[viewer]

    def unread(self, viewer: int, key: tuple) -> int:
        read = self.users[viewer].read_max.get(key, 0)
        return sum(1 for m in self.history(key) if m.sender != viewer and m.id > read)

    def dialog_keys(self, viewer: int) -> list[tuple]:
        keys = [k for k in self.messages if k[0] == DM and viewer in (k[1], k[2]) and self.history(k)]
        keys += [(c.kind, c.id) for c in self.chats.values() if viewer in c.members]
        return keys
