"""Telethon TL objects turned into the transport's plain records.

Pure functions: they read TL objects and what the caller already knows (the account, the entities that
came with the update, sticker sets looked up earlier) and never touch the network, so every branch is
tested with real TL objects.

Peer ids are Telethon's "marked" ids: users positive, basic groups negative, channels and supergroups
-100xxxxxxxxxx, the same ids `telethon.utils.get_peer_id` gives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from telethon import helpers, utils
from telethon.tl import types

from conversations.transport.base import (
    TYPING_UPDATE_SECONDS,
    WRITE_REFUSALS,
    ChatKind,
    DialogUnreadMark,
    InboundMessage,
    MediaItem,
    MessageEdited,
    MessagesDeleted,
    NewMessage,
    PartnerTyping,
    ReactionInfo,
    ReactionsChanged,
    Update,
)

STICKER_FORMATS = {"application/x-tgsticker": "animated", "video/webm": "video"}


@dataclass
class Context:
    """What normalisation needs besides the TL object itself."""

    me_id: int
    me_username: str = ""
    entities: Mapping[int, object] = field(default_factory=dict)  # marked id -> User/Chat/Channel
    sticker_sets: Mapping[int, tuple[str, str]] = field(default_factory=dict)  # set id -> (short, title)
    own_message_ids: Mapping[int, set[int]] = field(default_factory=dict)  # peer -> agent's message ids
    topic_titles: Mapping[tuple[int, int], str] = field(default_factory=dict)  # (peer, topic id) -> title


def peer_id_of(peer) -> int:
    return utils.get_peer_id(peer)


def chat_kind_of(peer, entities: Mapping[int, object]) -> ChatKind:
    if isinstance(peer, types.PeerUser):
        return "dm"
    if isinstance(peer, types.PeerChat):
        return "group"
    entity = entities.get(utils.get_peer_id(peer))
    if isinstance(entity, types.Channel) and entity.broadcast:
        return "channel"
    # Supergroups are channels with `megagroup`; an unknown channel is treated as a group, where
    # only callouts trigger, which is the cautious choice.
    return "group"


def write_refusal(entity) -> str:
    """Why the account cannot write in this group or channel (a `WRITE_REFUSALS` text), "" when it can
    or the entity is unknown. The original reads the same rights through `get_permissions`; the
    entity Telegram sends along with every update and history page has them already.

    Steps: a group the account left or was removed from; its own bans and restrictions
    (`banned_rights`); then, unless it is the creator or an admin, a broadcast channel (admins post)
    and the members' default rights (`default_banned_rights`)."""
    if isinstance(entity, types.ChatForbidden | types.ChannelForbidden):
        return WRITE_REFUSALS["left"]
    if not isinstance(entity, types.Chat | types.Channel):
        return ""
    if getattr(entity, "left", False) or getattr(entity, "deactivated", False):
        return WRITE_REFUSALS["left"]
    banned = getattr(entity, "banned_rights", None)
    if banned is not None and banned.view_messages:
        return WRITE_REFUSALS["banned"]
    if banned is not None and banned.send_messages:
        return WRITE_REFUSALS["restricted"]
    if entity.creator or entity.admin_rights is not None:
        if isinstance(entity, types.Channel) and entity.broadcast:
            return "" if entity.creator or entity.admin_rights.post_messages else WRITE_REFUSALS["read_only"]
        return ""
    if isinstance(entity, types.Channel) and entity.broadcast:
        return WRITE_REFUSALS["read_only"]
    default = entity.default_banned_rights
    if default is not None and default.send_messages:
        return WRITE_REFUSALS["members_restricted"]
    return ""


def display_name(entity) -> str:
    return utils.get_display_name(entity) if entity is not None else ""


def reaction_text(reaction) -> str:
    if isinstance(reaction, types.ReactionEmoji):
        return reaction.emoticon
    if isinstance(reaction, types.ReactionCustomEmoji):
        return f"custom_emoji:{reaction.document_id}"
    if isinstance(reaction, types.ReactionPaid):
        return "paid"
    return ""


def reactions_of(
    reactions: types.MessageReactions | None, me_id: int
) -> tuple[tuple[ReactionInfo, ...], bool]:
    """The reaction counts of a message, and whether one of them is an unread reaction by someone else."""
    if reactions is None:
        return (), False
    users: dict[str, list[int]] = {}
    unread_by_emoji: dict[str, bool] = {}
    any_unread = False
    for recent in reactions.recent_reactions or []:
        emoji = reaction_text(recent.reaction)
        uid = peer_id_of(recent.peer_id)
        users.setdefault(emoji, []).append(uid)
        if recent.unread and not recent.my and uid != me_id:
            unread_by_emoji[emoji] = True
            any_unread = True
    infos = []
    for result in reactions.results or []:
        emoji = reaction_text(result.reaction)
        if not emoji:
            continue
        infos.append(
            ReactionInfo(
                emoji=emoji,
                count=result.count,
                user_ids=tuple(users.get(emoji, ())),
                unread=unread_by_emoji.get(emoji, False),
            )
        )
    return tuple(infos), any_unread


def is_premium_sticker(doc: types.Document) -> bool:
    """Telegram marks a premium sticker with its premium animation: a video size of type "f"."""
    return any(
        isinstance(v, types.VideoSize) and v.type == "f" for v in getattr(doc, "video_thumbs", None) or []
    )


def _sticker_set_key(stickerset) -> int | None:
    return getattr(stickerset, "id", None)


def document_item(doc: types.Document, sticker_sets: Mapping[int, tuple[str, str]]) -> MediaItem:
    attrs = {type(a): a for a in doc.attributes}
    mime = doc.mime_type or ""
    base = {"unique_id": str(doc.id), "mime": mime, "size": doc.size}
    file_name = getattr(attrs.get(types.DocumentAttributeFilename), "file_name", "") or ""

    for attr_type, kind in (
        (types.DocumentAttributeSticker, "sticker"),
        (types.DocumentAttributeCustomEmoji, "custom_emoji"),
    ):
        attr = attrs.get(attr_type)
        if attr is None:
            continue
        set_name, set_title = "", ""
        if isinstance(attr.stickerset, types.InputStickerSetShortName):
            set_name = attr.stickerset.short_name
        key = _sticker_set_key(attr.stickerset)
        if key is not None and key in sticker_sets:
            set_name, set_title = sticker_sets[key]
        extra = {"sticker_set_id": key} if key is not None else {}
        return MediaItem(
            media_kind=kind,
            sticker_set_name=set_name,
            sticker_set_title=set_title,
            sticker_name=attr.alt or "",
            sticker_format=STICKER_FORMATS.get(mime, "static"),
            extra=extra,
            **base,
        )

    video = attrs.get(types.DocumentAttributeVideo)
    if types.DocumentAttributeAnimated in attrs:
        kind = "gif" if mime in ("video/mp4", "image/gif") else "animation"
        duration = float(video.duration) if video else None
        return MediaItem(media_kind=kind, duration=duration, file_name=file_name, **base)
    audio = attrs.get(types.DocumentAttributeAudio)
    if audio is not None:
        extra = {k: v for k, v in (("title", audio.title), ("performer", audio.performer)) if v}
        return MediaItem(
            media_kind="voice" if audio.voice else "audio",
            duration=float(audio.duration),
            file_name=file_name,
            extra=extra,
            **base,
        )
    if video is not None:
        extra = {"round": True} if video.round_message else {}
        return MediaItem(
            media_kind="video", duration=float(video.duration), file_name=file_name, extra=extra, **base
        )
    return MediaItem(media_kind="document", file_name=file_name, **base)


def media_items(message, sticker_sets: Mapping[int, tuple[str, str]]) -> tuple[MediaItem, ...]:
    items: list[MediaItem] = []
    media = getattr(message, "media", None)
    if isinstance(media, types.MessageMediaPhoto) and isinstance(media.photo, types.Photo):
        items.append(MediaItem(media_kind="photo", unique_id=str(media.photo.id), mime="image/jpeg"))
    elif isinstance(media, types.MessageMediaDocument) and isinstance(media.document, types.Document):
        items.append(document_item(media.document, sticker_sets))
    elif media is not None and not isinstance(media, (types.MessageMediaEmpty, types.MessageMediaWebPage)):
        # Polls, locations, contacts, dice...: named so the prompt can say what was sent.
        items.append(MediaItem(media_kind="other", extra={"type": type(media).__name__}))
    text = getattr(message, "message", "") or ""
    for ent in getattr(message, "entities", None) or []:
        if isinstance(ent, types.MessageEntityCustomEmoji):
            items.append(
                MediaItem(
                    media_kind="custom_emoji",
                    unique_id=str(ent.document_id),
                    sticker_name=_entity_text(text, ent),
                )
            )
    return tuple(items)


def _entity_text(text: str, ent) -> str:
    # Entity offsets count UTF-16 code units.
    surrogated = helpers.add_surrogate(text)
    return helpers.del_surrogate(surrogated[ent.offset : ent.offset + ent.length])


def mentions_me(message, me_id: int, me_username: str) -> bool:
    """An explicit mention of the account: @username in the text, or a mention by entity."""
    text = getattr(message, "message", "") or ""
    wanted = f"@{me_username}".lower() if me_username else ""
    for ent in getattr(message, "entities", None) or []:
        if isinstance(ent, types.MessageEntityMentionName) and ent.user_id == me_id:
            return True
        if isinstance(ent, types.InputMessageEntityMentionName):
            if getattr(ent.user_id, "user_id", None) == me_id:
                return True
        if isinstance(ent, types.MessageEntityMention) and wanted:
            if _entity_text(text, ent).lower() == wanted:
                return True
    return False


def _service_text(action) -> str:
    name = type(action).__name__.removeprefix("MessageAction")
    title = getattr(action, "title", None)
    return f"[{name}: {title}]" if title else f"[{name}]"


def forwarded_from(fwd: types.MessageFwdHeader | None, entities: Mapping[int, object]) -> str:
    if fwd is None:
        return ""
    if fwd.from_name:
        return fwd.from_name
    if fwd.from_id is not None:
        pid = peer_id_of(fwd.from_id)
        return display_name(entities.get(pid)) or str(pid)
    return "unknown"


def _date(value: dt.datetime | None) -> dt.datetime:
    if value is None:
        return dt.datetime.now(dt.UTC)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def inbound_message(message, ctx: Context) -> InboundMessage:
    """A `types.Message` or `types.MessageService` as the transport's InboundMessage."""
    peer_id = peer_id_of(message.peer_id)
    kind = chat_kind_of(message.peer_id, ctx.entities)
    out = bool(message.out)
    if message.from_id is not None:
        sender_id: int | None = peer_id_of(message.from_id)
    elif out:
        sender_id = ctx.me_id
    elif kind == "dm":
        sender_id = peer_id
    else:
        sender_id = None  # a channel post
    sender = ctx.entities.get(sender_id) if sender_id is not None else None
    chat = ctx.entities.get(peer_id)

    reply_to_id = None
    reply = message.reply_to
    if isinstance(reply, types.MessageReplyHeader) and reply.reply_to_msg_id:
        reply_to_id = reply.reply_to_msg_id
    topic_id = topic_of(message)
    if topic_id is not None and reply_to_id == topic_id and not reply.reply_to_top_id:
        reply_to_id = None  # a plain post in the topic, not a reply to the message that opened it

    is_service = isinstance(message, types.MessageService)
    explicit = False if is_service else mentions_me(message, ctx.me_id, ctx.me_username)
    own_ids = ctx.own_message_ids.get(peer_id, set())
    reply_to_agent = reply_to_id is not None and reply_to_id in own_ids
    # Telegram sets `mentioned` for explicit mentions and for replies to our messages.
    if message.mentioned and not explicit and not out:
        if reply_to_id is not None:
            reply_to_agent = True
        else:
            explicit = True
    reactions, _ = reactions_of(getattr(message, "reactions", None), ctx.me_id)

    return InboundMessage(
        peer_id=peer_id,
        chat_kind=kind,
        message_id=message.id,
        date=_date(message.date),
        sender_id=sender_id,
        sender_name=display_name(sender),
        sender_username=getattr(sender, "username", None) or "",
        sender_is_bot=bool(getattr(sender, "bot", False)),
        is_outgoing=out,
        text=_service_text(message.action) if is_service else (message.message or ""),
        reply_to_id=reply_to_id,
        media=() if is_service else media_items(message, ctx.sticker_sets),
        reactions=reactions,
        mentions_agent=explicit and not out,
        reply_to_agent=reply_to_agent and not out,
        forwarded_from="" if is_service else forwarded_from(message.fwd_from, ctx.entities),
        is_service=is_service,
        edited_at=_date(message.edit_date) if getattr(message, "edit_date", None) else None,
        chat_title=_chat_title(chat, kind, peer_id, ctx.me_id),
        chat_username=getattr(chat, "username", None) or "",
        topic_id=topic_id,
        topic_title=ctx.topic_titles.get((peer_id, topic_id), "") if topic_id is not None else "",
        cannot_write="" if kind == "dm" else write_refusal(chat),
    )


def topic_of(message) -> int | None:
    """The forum topic a message is in, as Telegram marks it: the topic's top message id.

    A message in a topic carries a reply header with `forum_topic`; its `reply_to_top_id` is the topic
    when it replies to another message of the topic, else `reply_to_msg_id` is. The message that
    opened a topic (`MessageActionTopicCreate`) is in the topic it opened, whose id is its own. Messages
    of the General topic, of plain groups and of DMs are in none."""
    if isinstance(getattr(message, "action", None), types.MessageActionTopicCreate):
        return message.id
    reply = getattr(message, "reply_to", None)
    if isinstance(reply, types.MessageReplyHeader) and reply.forum_topic:
        return reply.reply_to_top_id or reply.reply_to_msg_id
    return None


def topic_titles_of(message) -> tuple[int, str] | None:
    """(topic id, title) when the message opened a forum topic or renamed it."""
    action = getattr(message, "action", None)
    if isinstance(action, types.MessageActionTopicCreate):
        return message.id, action.title
    if isinstance(action, types.MessageActionTopicEdit) and action.title:
        topic_id = topic_of(message)
        return (topic_id, action.title) if topic_id is not None else None
    return None


def _chat_title(chat, kind: str, peer_id: int, me_id: int) -> str:
    """A group's or channel's title; a DM's is the other person's name, as the sandbox gives it, so a
    new partner is named in the prompt before the next dialog refresh. Saved Messages (a DM with
    oneself) keep the title the dialog list gives them."""
    if kind != "dm":
        return getattr(chat, "title", "") or ""
    return "" if peer_id == me_id else display_name(chat)


def unsupported_message(message, ctx: Context) -> InboundMessage:
    """A minimal record for a message `inbound_message` could not read, so it is not silently lost.

    Only the fields every message has are read; the content becomes one `other` media part marked
    unsupported (with the TL type, for the operator), and the raw text is kept when it is a string.
    """
    peer_id = peer_id_of(message.peer_id)
    kind = chat_kind_of(message.peer_id, ctx.entities)
    out = bool(getattr(message, "out", False))
    from_id = getattr(message, "from_id", None)
    if from_id is not None:
        sender_id: int | None = peer_id_of(from_id)
    elif out:
        sender_id = ctx.me_id
    else:
        sender_id = peer_id if kind == "dm" else None
    text = getattr(message, "message", "")
    media = getattr(message, "media", None)
    content_type = type(media).__name__ if media is not None else type(message).__name__
    return InboundMessage(
        peer_id=peer_id,
        chat_kind=kind,
        message_id=message.id,
        date=_date(getattr(message, "date", None)),
        sender_id=sender_id,
        sender_name=display_name(ctx.entities.get(sender_id)) if sender_id is not None else "",
        is_outgoing=out,
        text=text if isinstance(text, str) else "",
        media=(MediaItem(media_kind="other", extra={"type": "unsupported", "tl_type": content_type}),),
        topic_id=_safe_topic(message),
    )


def _safe_topic(message) -> int | None:
    """The message's forum topic, or None when even that cannot be read (it then lands in General)."""
    try:
        topic = topic_of(message)
    except Exception:
        return None
    return topic if isinstance(topic, int) else None


NEW_MESSAGE_UPDATES = (types.UpdateNewMessage, types.UpdateNewChannelMessage)
EDIT_UPDATES = (types.UpdateEditMessage, types.UpdateEditChannelMessage)


def short_message(update, me_id: int) -> types.Message | None:
    """The full Message behind Telegram's compact DM / basic-group updates (as Telethon's NewMessage does)."""
    if isinstance(update, types.UpdateShortMessage):
        peer, sender = types.PeerUser(update.user_id), update.user_id
    elif isinstance(update, types.UpdateShortChatMessage):
        peer, sender = types.PeerChat(update.chat_id), update.from_id
    else:
        return None
    return types.Message(
        id=update.id,
        peer_id=peer,
        date=update.date,
        message=update.message,
        out=update.out,
        mentioned=update.mentioned,
        media_unread=update.media_unread,
        silent=update.silent,
        from_id=types.PeerUser(me_id if update.out else sender),
        fwd_from=update.fwd_from,
        via_bot_id=update.via_bot_id,
        reply_to=update.reply_to,
        entities=update.entities,
        ttl_period=update.ttl_period,
    )


def message_of(update, me_id: int):
    """The message a new-message or edit update carries, or None."""
    short = short_message(update, me_id)
    if short is not None:
        return short
    if isinstance(update, (*NEW_MESSAGE_UPDATES, *EDIT_UPDATES)):
        message = update.message
        return None if isinstance(message, types.MessageEmpty) else message
    return None


def updates_from(update, ctx: Context) -> list[Update]:
    """The protocol updates for one Telethon update (empty for kinds Cindy does not use)."""
    short = short_message(update, ctx.me_id)
    if short is not None:
        return [NewMessage(inbound_message(short, ctx))]
    if isinstance(update, NEW_MESSAGE_UPDATES) and not isinstance(update.message, types.MessageEmpty):
        return [NewMessage(inbound_message(update.message, ctx))]
    if isinstance(update, EDIT_UPDATES) and not isinstance(update.message, types.MessageEmpty):
        return [MessageEdited(inbound_message(update.message, ctx))]
    if isinstance(update, types.UpdateDeleteMessages):
        return [MessagesDeleted(peer_id=None, message_ids=tuple(update.messages))]
    if isinstance(update, types.UpdateDeleteChannelMessages):
        peer = peer_id_of(types.PeerChannel(update.channel_id))
        return [MessagesDeleted(peer_id=peer, message_ids=tuple(update.messages))]
    if isinstance(update, types.UpdateUserTyping) and update.user_id != ctx.me_id:
        stopped = isinstance(update.action, types.SendMessageCancelAction)
        return [PartnerTyping(peer_id=update.user_id, seconds=0.0 if stopped else TYPING_UPDATE_SECONDS)]
    if isinstance(update, types.UpdateDialogUnreadMark) and isinstance(update.peer, types.DialogPeer):
        return [DialogUnreadMark(peer_id=peer_id_of(update.peer.peer), unread=bool(update.unread))]
    if isinstance(update, types.UpdateMessageReactions):
        reactions, unread = reactions_of(update.reactions, ctx.me_id)
        return [
            ReactionsChanged(
                peer_id=peer_id_of(update.peer),
                message_id=update.msg_id,
                reactions=reactions,
                unread=unread,
            )
        ]
    return []


def sticker_sets_needed(message) -> set[int]:
    """Ids of sticker sets a message's media refers to only by id (their names need a lookup)."""
    media = getattr(message, "media", None)
    doc = getattr(media, "document", None)
    if not isinstance(doc, types.Document):
        return set()
    needed = set()
    for attr in doc.attributes:
        if isinstance(attr, (types.DocumentAttributeSticker, types.DocumentAttributeCustomEmoji)):
            if isinstance(attr.stickerset, types.InputStickerSetID):
                needed.add(attr.stickerset.id)
    return needed
