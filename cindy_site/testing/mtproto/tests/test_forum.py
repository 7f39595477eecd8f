"""The stand-in's forum supergroups through the real Telethon client and the control interface."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from telethon import errors
from telethon.tl import functions, types

from cindy_site.testing.mtproto.control import serve_control

from .test_api import logged_in, post, standin  # noqa: F401 - the module's stand-in fixture


def test_a_forum_lists_its_topics_and_marks_each_message_with_its_topic(standin):  # noqa: F811
    server = standin
    forum = server.run(
        server.world.create_group, title="Allotment", member_ids=[server.ann.id, server.bob.id], forum=True
    )
    plain = server.run(server.world.create_group, title="Club", member_ids=[server.ann.id], supergroup=True)
    key = ("channel", forum.id)
    seeds = server.run(server.world.create_topic, server.bob.id, forum.id, "Seeds").id
    tools = server.run(server.world.create_topic, server.bob.id, forum.id, "Tools").id
    asked, _pts, _new = server.run(server.world.send, server.bob.id, key, "beans?", topic=seeds)
    server.run(server.world.send, server.bob.id, key, "hello all")
    peer = types.InputPeerChannel(forum.id, forum.access_hash)

    async def run():
        client = await logged_in(server)
        listed = await client(functions.messages.GetForumTopicsRequest(peer, None, 0, 0, 10))
        by_id = await client(functions.messages.GetForumTopicsByIDRequest(peer, [tools]))
        history = await client(functions.messages.GetHistoryRequest(peer, 0, None, 0, 10, 0, 0, 0))
        sent = await client(
            functions.messages.SendMessageRequest(
                peer,
                "peas",
                reply_to=types.InputReplyToMessage(reply_to_msg_id=asked.id, top_msg_id=seeds),
                random_id=4242,
            )
        )
        replies = await client(functions.messages.GetRepliesRequest(peer, seeds, 0, None, 0, 10, 0, 0, 0))
        chats = (
            await client(functions.messages.GetDialogsRequest(None, 0, types.InputPeerEmpty(), 10, 0))
        ).chats
        try:
            await client(
                functions.messages.GetForumTopicsRequest(
                    types.InputPeerChannel(plain.id, plain.access_hash), None, 0, 0, 10
                )
            )
            refused = ""
        except errors.RPCError as exc:
            refused = type(exc).__name__
        await client.disconnect()
        return listed, by_id, history, sent, replies, chats, refused

    listed, by_id, history, sent, replies, chats, refused = asyncio.run(run())
    assert [(t.id, t.title) for t in listed.topics] == [(tools, "Tools"), (seeds, "Seeds")]
    assert [t.title for t in by_id.topics] == ["Tools"]
    assert next(c for c in chats if c.id == forum.id).forum is True
    messages = {m.id: m for m in history.messages}
    opener = messages[seeds]
    assert isinstance(opener, types.MessageService) and opener.action.title == "Seeds"
    header = messages[asked.id].reply_to
    assert (header.forum_topic, header.reply_to_msg_id, header.reply_to_top_id) == (True, seeds, None)
    general = next(m for m in history.messages if getattr(m, "message", "") == "hello all")
    assert general.reply_to is None
    [reply] = [u.message for u in sent.updates if isinstance(u, types.UpdateNewChannelMessage)]
    assert (reply.reply_to.forum_topic, reply.reply_to.reply_to_msg_id, reply.reply_to.reply_to_top_id) == (
        True,
        asked.id,
        seeds,
    )
    assert [m.id for m in replies.messages] == [reply.id, asked.id, seeds]  # newest first, this topic only
    assert refused == "ChannelForumMissingError"  # Telegram's CHANNEL_FORUM_MISSING


def test_the_control_interface_opens_topics_and_writes_in_them(standin):  # noqa: F811
    httpd = serve_control(standin)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        status, forum = post(
            f"{base}/groups", {"title": "Plot", "member_ids": [standin.ann.id, standin.bob.id], "forum": True}
        )
        assert status == 200 and forum["kind"] == "channel"
        status, topic = post(
            f"{base}/topics", {"from": standin.bob.id, "group": forum["id"], "title": "Seeds"}
        )
        assert status == 200
        status, sent = post(
            f"{base}/send",
            {"from": standin.bob.id, "group": forum["id"], "text": "beans?", "topic": topic["topic_id"]},
        )
        assert status == 200
        with urllib.request.urlopen(f"{base}/messages?group={forum['id']}", timeout=10) as r:
            listed = json.loads(r.read())["messages"]
        assert [(m["id"], m["topic"]) for m in listed] == [
            (topic["topic_id"], topic["topic_id"]),
            (sent["message_id"], topic["topic_id"]),
        ]
        assert post(
            f"{base}/send", {"from": standin.bob.id, "group": forum["id"], "text": "x", "topic": 999}
        ) == (400, {"error": "topic 999 is no topic of this chat: create it with POST /topics"})
    finally:
        httpd.shutdown()
