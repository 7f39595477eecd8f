"""Forum topics in the adapter's normalisation: which topic a message is in, and what it replies to."""

from __future__ import annotations

from telethon.tl import types

from telegram.normalize import inbound_message, topic_of, unsupported_message

from .doubles import DATE
from .test_normalize import ANN, CHAT, ctx, msg

FORUM = types.PeerChannel(901)


def in_forum(text: str, header: types.MessageReplyHeader | None, **kw) -> types.Message:
    return msg(text, peer=FORUM, from_id=types.PeerUser(ANN), reply_to=header, **kw)


def test_a_post_in_a_topic_is_in_that_topic_and_replies_to_nothing():
    record = inbound_message(
        in_forum("beans?", types.MessageReplyHeader(forum_topic=True, reply_to_msg_id=7)),
        ctx(topic_titles={(CHAT, 7): "Seeds"}, own_message_ids={CHAT: {7}}),
    )
    # The agent opened the topic (message 7 is its own): a post in the topic is still no reply to it.
    assert (record.topic_id, record.topic_title, record.reply_to_id) == (7, "Seeds", None)
    assert not record.reply_to_agent


def test_a_reply_inside_a_topic_names_the_message_and_the_topic():
    header = types.MessageReplyHeader(forum_topic=True, reply_to_msg_id=12, reply_to_top_id=7)
    record = inbound_message(in_forum("yes", header), ctx(own_message_ids={CHAT: {12}}))
    assert (record.topic_id, record.reply_to_id, record.reply_to_agent) == (7, 12, True)
    assert record.topic_title == ""  # not known yet: the transport looks it up


def test_general_and_plain_replies_are_in_no_topic():
    general = inbound_message(in_forum("hello all", None), ctx())
    plain_reply = inbound_message(in_forum("yes", types.MessageReplyHeader(reply_to_msg_id=3)), ctx())
    assert (general.topic_id, plain_reply.topic_id, plain_reply.reply_to_id) == (None, None, 3)


def test_the_message_that_opens_a_topic_is_in_it():
    opened = types.MessageService(
        id=7,
        peer_id=FORUM,
        date=DATE,
        from_id=types.PeerUser(ANN),
        action=types.MessageActionTopicCreate(title="Seeds", icon_color=0),
    )
    record = inbound_message(opened, ctx(topic_titles={(CHAT, 7): "Seeds"}))
    assert (record.topic_id, record.is_service, record.text) == (7, True, "[TopicCreate: Seeds]")
    assert topic_of(opened) == 7


def test_an_unreadable_message_keeps_its_topic():
    broken = in_forum("x", types.MessageReplyHeader(forum_topic=True, reply_to_msg_id=7))
    assert unsupported_message(broken, ctx()).topic_id == 7
