"""Real Telethon TL objects through the adapter's normalisation."""

from __future__ import annotations

import pytest
from telethon import utils
from telethon.tl import types

from conversations.transport.base import (
    TYPING_UPDATE_SECONDS,
    MessageEdited,
    MessagesDeleted,
    NewMessage,
    PartnerTyping,
    ReactionsChanged,
)
from telegram.normalize import Context, inbound_message, updates_from

from .doubles import DATE, ME_ID, ME_USERNAME, channel, user

ANN = 501
NEWS = utils.get_peer_id(types.PeerChannel(900))
CHAT = utils.get_peer_id(types.PeerChannel(901))


def ctx(**kw) -> Context:
    entities = {ANN: user(ANN), NEWS: channel(900, "News"), CHAT: channel(901, "Chat", megagroup=True)}
    return Context(me_id=ME_ID, me_username=ME_USERNAME, entities=entities, **kw)


def msg(text="hi", *, peer=None, media=None, entities=None, **kw) -> types.Message:
    return types.Message(
        id=kw.pop("id", 10),
        peer_id=peer or types.PeerUser(ANN),
        date=DATE,
        message=text,
        media=media,
        entities=entities,
        **kw,
    )


def doc(mime: str, *attributes, doc_id: int = 77) -> types.MessageMediaDocument:
    return types.MessageMediaDocument(
        document=types.Document(
            id=doc_id,
            access_hash=1,
            file_reference=b"ref",
            date=DATE,
            mime_type=mime,
            size=2048,
            dc_id=2,
            attributes=list(attributes),
        )
    )


def only_media(message, **kw):
    (item,) = inbound_message(message, ctx(**kw)).media
    return item


def test_photo_is_normalised_with_its_id():
    photo = types.Photo(id=42, access_hash=1, file_reference=b"r", date=DATE, sizes=[], dc_id=2)
    item = only_media(msg("", media=types.MessageMediaPhoto(photo=photo)))
    assert (item.media_kind, item.unique_id) == ("photo", "42")


@pytest.mark.parametrize(
    ("mime", "fmt"),
    [("image/webp", "static"), ("application/x-tgsticker", "animated"), ("video/webm", "video")],
)
def test_sticker_carries_set_emoji_unique_id_and_format(mime, fmt):
    attr = types.DocumentAttributeSticker(alt="😀", stickerset=types.InputStickerSetShortName("MrRibbit"))
    item = only_media(msg("", media=doc(mime, attr)))
    assert item.media_kind == "sticker"
    assert (item.sticker_set_name, item.sticker_name, item.unique_id) == ("MrRibbit", "😀", "77")
    assert item.sticker_format == fmt


def test_sticker_known_by_set_id_takes_name_and_title_from_the_lookup():
    attr = types.DocumentAttributeSticker(alt="🐸", stickerset=types.InputStickerSetID(id=5, access_hash=6))
    item = only_media(msg("", media=doc("image/webp", attr)), sticker_sets={5: ("MrRibbit", "Mr Ribbit")})
    assert (item.sticker_set_name, item.sticker_set_title) == ("MrRibbit", "Mr Ribbit")


def test_gif_is_an_animated_mp4():
    media = doc(
        "video/mp4",
        types.DocumentAttributeVideo(duration=2.5, w=320, h=240),
        types.DocumentAttributeAnimated(),
    )
    item = only_media(msg("", media=media))
    assert (item.media_kind, item.duration) == ("gif", 2.5)


def test_animated_non_mp4_is_an_animation():
    item = only_media(msg("", media=doc("image/png", types.DocumentAttributeAnimated())))
    assert item.media_kind == "animation"


def test_video_and_round_video():
    video = only_media(msg("", media=doc("video/mp4", types.DocumentAttributeVideo(duration=12, w=1, h=1))))
    assert (video.media_kind, video.duration) == ("video", 12.0)
    round_ = only_media(
        msg(
            "", media=doc("video/mp4", types.DocumentAttributeVideo(duration=3, w=1, h=1, round_message=True))
        )
    )
    assert round_.extra == {"round": True}


def test_voice_and_audio_are_told_apart():
    voice = only_media(msg("", media=doc("audio/ogg", types.DocumentAttributeAudio(duration=4, voice=True))))
    assert (voice.media_kind, voice.duration) == ("voice", 4.0)
    song = only_media(
        msg(
            "",
            media=doc(
                "audio/mpeg", types.DocumentAttributeAudio(duration=200, title="Song", performer="Band")
            ),
        )
    )
    assert song.media_kind == "audio"
    assert song.extra == {"title": "Song", "performer": "Band"}


def test_document_keeps_its_file_name():
    item = only_media(msg("", media=doc("application/pdf", types.DocumentAttributeFilename("cv.pdf"))))
    assert (item.media_kind, item.file_name, item.mime, item.size) == (
        "document",
        "cv.pdf",
        "application/pdf",
        2048,
    )


def test_custom_emoji_entities_become_media_items():
    text = "ok 🦊!"
    ent = types.MessageEntityCustomEmoji(offset=3, length=2, document_id=999)  # 🦊 is two UTF-16 units
    item = only_media(msg(text, entities=[ent]))
    assert (item.media_kind, item.unique_id, item.sticker_name) == ("custom_emoji", "999", "🦊")


def test_other_media_is_named_not_dropped():
    item = only_media(
        msg("", media=types.MessageMediaGeo(geo=types.GeoPoint(long=1.0, lat=2.0, access_hash=0)))
    )
    assert item.media_kind == "other"
    assert item.extra == {"type": "MessageMediaGeo"}


def test_mention_by_username_is_detected_case_insensitively():
    text = "hey @heidi_bot look"
    m = msg(
        text,
        peer=types.PeerChannel(901),
        from_id=types.PeerUser(ANN),
        entities=[types.MessageEntityMention(offset=4, length=10)],
    )
    assert inbound_message(m, ctx()).mentions_agent


def test_mention_of_someone_else_is_not_a_callout():
    m = msg(
        "hey @bob",
        peer=types.PeerChannel(901),
        from_id=types.PeerUser(ANN),
        entities=[types.MessageEntityMention(offset=4, length=4)],
    )
    got = inbound_message(m, ctx())
    assert not got.mentions_agent and not got.reply_to_agent


def test_mention_by_entity_is_detected():
    m = msg(
        "Heidi, hi",
        peer=types.PeerChat(33),
        from_id=types.PeerUser(ANN),
        entities=[types.MessageEntityMentionName(offset=0, length=5, user_id=ME_ID)],
    )
    got = inbound_message(m, ctx())
    assert got.mentions_agent and got.chat_kind == "group" and got.peer_id == -33


def test_reply_to_the_agents_message_is_detected():
    header = types.MessageReplyHeader(reply_to_msg_id=5)
    known = inbound_message(
        msg("yes", peer=types.PeerChannel(901), from_id=types.PeerUser(ANN), reply_to=header),
        ctx(own_message_ids={CHAT: {5}}),
    )
    assert known.reply_to_agent and known.reply_to_id == 5 and not known.mentions_agent
    # An older message of ours that we do not remember: Telegram's `mentioned` flag says so.
    flagged = inbound_message(
        msg("yes", peer=types.PeerChannel(901), from_id=types.PeerUser(ANN), reply_to=header, mentioned=True),
        ctx(),
    )
    assert flagged.reply_to_agent and not flagged.mentions_agent
    other = inbound_message(
        msg("yes", peer=types.PeerChannel(901), from_id=types.PeerUser(ANN), reply_to=header), ctx()
    )
    assert not other.reply_to_agent


def test_chat_kinds_and_senders():
    dm = inbound_message(msg("hi"), ctx())
    assert (dm.chat_kind, dm.peer_id, dm.sender_id, dm.sender_name, dm.sender_username) == (
        "dm",
        ANN,
        ANN,
        "Ann",
        "ann",
    )
    post = inbound_message(msg("news", peer=types.PeerChannel(900), post=True), ctx())
    assert (post.chat_kind, post.peer_id, post.sender_id, post.chat_title) == (
        "channel",
        NEWS,
        None,
        "News",
    )
    group = inbound_message(msg("x", peer=types.PeerChannel(901), from_id=types.PeerUser(ANN)), ctx())
    assert group.chat_kind == "group"


def test_outgoing_message_from_another_device():
    got = inbound_message(msg("sent from my phone", out=True), ctx())
    assert got.is_outgoing and got.sender_id == ME_ID and not got.mentions_agent


def test_forward_and_service_messages():
    fwd = inbound_message(
        msg("fw", fwd_from=types.MessageFwdHeader(date=DATE, from_name="Old Friend")), ctx()
    )
    assert fwd.forwarded_from == "Old Friend"
    fwd_peer = inbound_message(
        msg("fw", fwd_from=types.MessageFwdHeader(date=DATE, from_id=types.PeerUser(ANN))), ctx()
    )
    assert fwd_peer.forwarded_from == "Ann"
    service = types.MessageService(
        id=11,
        peer_id=types.PeerChat(33),
        date=DATE,
        from_id=types.PeerUser(ANN),
        action=types.MessageActionChatEditTitle(title="New name"),
    )
    got = inbound_message(service, ctx())
    assert got.is_service and got.text == "[ChatEditTitle: New name]" and got.media == ()


def test_new_edit_and_delete_updates():
    new = updates_from(types.UpdateNewMessage(message=msg("a"), pts=1, pts_count=1), ctx())
    assert isinstance(new[0], NewMessage) and new[0].message.text == "a"
    edited = msg("a2", edit_date=DATE)
    (edit,) = updates_from(types.UpdateEditMessage(message=edited, pts=2, pts_count=1), ctx())
    assert isinstance(edit, MessageEdited) and edit.message.edited_at == DATE
    (deleted,) = updates_from(types.UpdateDeleteMessages(messages=[1, 2], pts=3, pts_count=2), ctx())
    assert deleted == MessagesDeleted(peer_id=None, message_ids=(1, 2))
    (chan_del,) = updates_from(
        types.UpdateDeleteChannelMessages(channel_id=901, messages=[4], pts=5, pts_count=1), ctx()
    )
    assert chan_del == MessagesDeleted(peer_id=CHAT, message_ids=(4,))


def test_unread_reaction_on_the_agents_message():
    reactions = types.MessageReactions(
        results=[types.ReactionCount(reaction=types.ReactionEmoji("❤️"), count=1)],
        recent_reactions=[
            types.MessagePeerReaction(
                peer_id=types.PeerUser(ANN), date=DATE, reaction=types.ReactionEmoji("❤️"), unread=True
            )
        ],
    )
    (update,) = updates_from(
        types.UpdateMessageReactions(peer=types.PeerUser(ANN), msg_id=9, reactions=reactions), ctx()
    )
    assert isinstance(update, ReactionsChanged)
    assert (update.peer_id, update.message_id, update.unread) == (ANN, 9, True)
    assert update.reactions[0].emoji == "❤️" and update.reactions[0].user_ids == (ANN,)


def test_read_or_own_reactions_are_not_unread():
    reactions = types.MessageReactions(
        results=[types.ReactionCount(reaction=types.ReactionEmoji("👍"), count=2)],
        recent_reactions=[
            types.MessagePeerReaction(
                peer_id=types.PeerUser(ANN), date=DATE, reaction=types.ReactionEmoji("👍")
            ),
            types.MessagePeerReaction(
                peer_id=types.PeerUser(ME_ID),
                date=DATE,
                reaction=types.ReactionEmoji("👍"),
                unread=True,
                my=True,
            ),
        ],
    )
    (update,) = updates_from(
        types.UpdateMessageReactions(peer=types.PeerUser(ANN), msg_id=9, reactions=reactions), ctx()
    )
    assert not update.unread and update.reactions[0].count == 2


def test_short_dm_and_basic_group_updates_become_messages():
    (dm,) = updates_from(
        types.UpdateShortMessage(id=3, user_id=ANN, message="psst", pts=1, pts_count=1, date=DATE), ctx()
    )
    assert (dm.message.peer_id, dm.message.sender_id, dm.message.text, dm.message.chat_kind) == (
        ANN,
        ANN,
        "psst",
        "dm",
    )
    (group,) = updates_from(
        types.UpdateShortChatMessage(
            id=4,
            from_id=ANN,
            chat_id=33,
            message="@heidi_bot hi",
            pts=2,
            pts_count=1,
            date=DATE,
            entities=[types.MessageEntityMention(offset=0, length=10)],
        ),
        ctx(),
    )
    assert (group.message.peer_id, group.message.chat_kind, group.message.mentions_agent) == (
        -33,
        "group",
        True,
    )
    (mine,) = updates_from(
        types.UpdateShortMessage(
            id=5, user_id=ANN, message="from phone", pts=3, pts_count=1, date=DATE, out=True
        ),
        ctx(),
    )
    assert mine.message.is_outgoing and mine.message.sender_id == ME_ID


def test_a_dm_is_titled_with_the_other_persons_name_as_in_the_sandbox():
    """The prompt's Channel Details name a new DM partner from their first message on, not only once
    the dialog list was next refreshed."""
    assert inbound_message(msg("hi"), ctx()).chat_title == "Ann"
    mine = inbound_message(msg("hi", out=True), ctx())
    assert mine.chat_title == "Ann"
    saved = inbound_message(msg("note to self", peer=types.PeerUser(ME_ID), out=True), ctx())
    assert saved.chat_title == ""  # Saved Messages keep the title the dialog list gives them


def test_a_bot_sender_is_flagged_and_a_person_is_not():
    bot = types.User(
        id=602, access_hash=1, first_name="Helper", username="helper_bot", bot=True, bot_info_version=1
    )
    context = Context(me_id=ME_ID, me_username=ME_USERNAME, entities={ANN: user(ANN), 602: bot})

    assert inbound_message(msg(peer=types.PeerUser(602)), context).sender_is_bot is True
    assert inbound_message(msg(), context).sender_is_bot is False


def test_a_partners_typing_update_becomes_partner_typing_and_a_cancel_stops_it():
    typing = types.UpdateUserTyping(user_id=ANN, action=types.SendMessageTypingAction())
    cancel = types.UpdateUserTyping(user_id=ANN, action=types.SendMessageCancelAction())
    mine = types.UpdateUserTyping(user_id=ME_ID, action=types.SendMessageTypingAction())

    assert updates_from(typing, ctx()) == [PartnerTyping(peer_id=ANN, seconds=TYPING_UPDATE_SECONDS)]
    assert updates_from(cancel, ctx()) == [PartnerTyping(peer_id=ANN, seconds=0.0)]
    assert updates_from(mine, ctx()) == []
