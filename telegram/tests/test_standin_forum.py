"""Forum topics through `TelethonTransport` and the real Telethon client, against the loopback stand-in:
each message names its topic, a send in a topic lands there, a topic's history is its own."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from telethon.tl import types

from conversations.transport.base import NewMessage
from telegram.normalize import peer_id_of

from .test_standin_transport import connected, next_updates, standin, world  # noqa: F401 - fixtures


def test_messages_sends_typing_history_and_read_marks_follow_the_forum_topic(world):  # noqa: F811
    server, agent, me, bob = world
    forum = server.run(server.world.create_group, title="Allotment", member_ids=[me.id, bob.id], forum=True)
    key = ("channel", forum.id)
    peer = peer_id_of(types.PeerChannel(forum.id))

    async def run():
        transport = await connected(agent)
        seeds = server.run(server.world.create_topic, bob.id, forum.id, "Seeds").id
        tools = server.run(server.world.create_topic, bob.id, forum.id, "Tools").id
        first, _pts, _new = server.run(server.world.send, bob.id, key, "beans or peas?", topic=seeds)
        server.run(server.world.send, bob.id, key, "who has a spade?", topic=tools)
        server.run(server.world.send, bob.id, key, "hello all")
        got = []
        while len(got) < 5:
            got += await next_updates(transport, NewMessage)
        await transport.set_typing(peer, True, topic_id=seeds)
        sent = await transport.send_text(peer, "peas", random_id=7001, reply_to=first.id, topic_id=seeds)
        plain = await transport.send_text(peer, "in the seeds topic", random_id=7002, topic_id=seeds)
        history = await transport.history(peer, topic_id=seeds)
        await transport.mark_read(peer, plain.message_id, topic_id=seeds)
        await transport.disconnect()
        return seeds, tools, [u.message for u in got], sent, plain, history

    seeds, tools, got, sent, plain, history = async_to_sync(run)()
    by_text = {m.text: m for m in got}
    opened = by_text["[TopicCreate: Seeds]"]
    assert (opened.topic_id, opened.topic_title, opened.is_service) == (seeds, "Seeds", True)
    assert (by_text["beans or peas?"].topic_id, by_text["beans or peas?"].topic_title) == (seeds, "Seeds")
    assert by_text["beans or peas?"].reply_to_id is None  # a post in the topic, not a reply to its opener
    assert (by_text["who has a spade?"].topic_id, by_text["who has a spade?"].topic_title) == (tools, "Tools")
    assert by_text["hello all"].topic_id is None  # General
    stored = {m.id: m for m in server.run(server.world.history, key)}
    assert (stored[sent.message_id].topic, stored[sent.message_id].reply_to) == (
        seeds,
        by_text["beans or peas?"].message_id,
    )
    assert (stored[plain.message_id].topic, stored[plain.message_id].reply_to) == (seeds, None)
    assert [m.text for m in history] == [
        "[TopicCreate: Seeds]",
        "beans or peas?",
        "peas",
        "in the seeds topic",
    ]
    assert all(m.topic_id == seeds for m in history)
    assert server.world.users[me.id].read_max[(*key, seeds)] == plain.message_id
    typing = server.calls_of("messages.setTyping")[-1]
    assert typing.error == ""
    assert server.calls_of("messages.getReplies") and server.calls_of("messages.readDiscussion")
    assert server.calls_of("messages.readReactions")[-1].error == ""
