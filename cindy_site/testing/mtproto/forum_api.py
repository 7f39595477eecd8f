"""The stand-in's forum methods: a supergroup with topics (`Channel.forum`), as Telegram answers them.

A topic's id is the id of the service message that opened it (`MessageActionTopicCreate`); its
messages carry `MessageReplyHeader(forum_topic=True, ...)` (world.py). Handled here:
messages.getForumTopics / getForumTopicsByID (Telegram's older layers named the first
channels.getForumTopics), messages.getReplies (a topic's history) and messages.readDiscussion (a
topic's read mark).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from telethon.tl import functions, types

from .rpc import RpcFail, handles
from .world import CHANNEL

if TYPE_CHECKING:
    from .world import Chat, Message, World


class ForumApi:
    world: World

    def _forum(self, me: int, peer) -> tuple[tuple, Chat]:
        key = self.world.key_for(me, peer)
        chat = self.world.chats.get(key[1]) if key[0] == CHANNEL else None
        if chat is None or not chat.forum:
            raise RpcFail(400, "CHANNEL_FORUM_MISSING")
        return key, chat

    def _topic_messages(self, key: tuple, topic_id: int) -> list[Message]:
        return [m for m in self.world.history(key) if m.topic == topic_id]

    def _tl_topic(self, me: int, key: tuple, chat: Chat, topic_id: int) -> types.ForumTopic:
        messages = self._topic_messages(key, topic_id)
        opener = next((m for m in messages if m.id == topic_id), None)
        read = self.world.users[me].read_max.get((*key, topic_id), 0)
        return types.ForumTopic(
            id=topic_id,
            date=opener.date if opener else int(time.time()),
            peer=self.world.peer_of(key, me),
            title=chat.topics[topic_id],
            icon_color=0,
            top_message=max((m.id for m in messages), default=topic_id),
            read_inbox_max_id=read,
            read_outbox_max_id=0,
            unread_count=sum(1 for m in messages if m.sender != me and m.id > read),
            unread_mentions_count=0,
            unread_reactions_count=0,
            unread_poll_votes_count=0,
            from_id=types.PeerUser(opener.sender if opener else me),
            notify_settings=types.PeerNotifySettings(),
            my=bool(opener and opener.sender == me) or None,
        )

    def _topics_result(
        self, me: int, key: tuple, chat: Chat, topic_ids: list[int]
    ) -> types.messages.ForumTopics:
        topics = [self._tl_topic(me, key, chat, t) for t in topic_ids]
        tops = [self.world.find(key, t.top_message) for t in topics]
        users, chats = self.world.extras({key}, me)
        return types.messages.ForumTopics(
            count=len(chat.topics),
            topics=topics,
            messages=[self.world.tl_message(m, me) for m in tops if m is not None],
            chats=chats,
            users=users,
            pts=chat.pts,
        )

    @handles(functions.messages.GetForumTopicsRequest)
    def get_forum_topics(self, conn, request):
        me = self._me(conn)
        key, chat = self._forum(me, request.peer)
        wanted = sorted(chat.topics, reverse=True)
        if request.q:
            wanted = [t for t in wanted if request.q.lower() in chat.topics[t].lower()]
        if request.offset_topic:
            wanted = [t for t in wanted if t < request.offset_topic]
        return self._topics_result(me, key, chat, wanted[: request.limit or 100])

    @handles(functions.messages.GetForumTopicsByIDRequest)
    def get_forum_topics_by_id(self, conn, request):
        me = self._me(conn)
        key, chat = self._forum(me, request.peer)
        return self._topics_result(me, key, chat, [t for t in request.topics if t in chat.topics])

    @handles(functions.messages.GetRepliesRequest)
    def get_replies(self, conn, request):
        """A topic's messages, paged like messages.getHistory (newest first from `offset_id`)."""
        me = self._me(conn)
        key, chat = self._forum(me, request.peer)
        if request.msg_id not in chat.topics:
            raise RpcFail(400, "MSG_ID_INVALID")
        newest_first = sorted(self._topic_messages(key, request.msg_id), key=lambda m: -m.id)
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

    @handles(functions.messages.ReadDiscussionRequest)
    def read_discussion(self, conn, request):
        me = self._me(conn)
        key, chat = self._forum(me, request.peer)
        if request.msg_id not in chat.topics:
            raise RpcFail(400, "MSG_ID_INVALID")
        marks = self.world.users[me].read_max
        topic_key = (*key, request.msg_id)
        marks[topic_key] = max(marks.get(topic_key, 0), request.read_max_id)
        return True
