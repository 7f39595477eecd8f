"""The stand-in's HTTP control interface (loopback only): a script or a person acts as the other side.

    POST /users      {"first_name", "username"?, "phone"?, "password"?, "id"?, "bot"?}   -> the user
                     ("id": 777000 is Telegram's service account; "bot": true makes a bot)
    POST /groups     {"title", "member_ids": [...], "supergroup"?, "forum"?}  -> the group
                     ("forum": true makes a supergroup with topics)
    POST /topics     {"from", "group", "title"}        -> {"topic_id"} (MessageActionTopicCreate)
    POST /send       {"from", "to" | "group", "text", "reply_to"?, "mention"?, "photo"?, "sticker"?,
                      "topic"?}                        ("topic": a forum topic's id; none: General)
    POST /typing     {"from", "to", "cancel"?}        (UpdateUserTyping in their DM)
    POST /react      {"from", "to" | "group", "message_id", "emoji"}
    POST /edit       {"from", "to" | "group", "message_id", "text"}
    POST /delete     {"from", "to" | "group", "message_ids": [...]}
    POST /block      {"from", "user"}                 (the user "from" blocks "user")
    POST /flood_wait {"method": "messages.sendMessage", "seconds": 30, "times"?: 1}
    GET  /messages?user=A&peer=B  or  ?group=G        -> messages with their random_ids and topics
    GET  /calls                                        -> every request with its time and error
Errors answer 400 with {"error": "..."} naming the bad field.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from telethon.tl import types

from .world import WorldError


class ControlError(Exception):
    pass


def _field(body: dict, name: str, kind: type = str) -> Any:
    if name not in body:
        raise ControlError(f"missing field {name!r}")
    try:
        return kind(body[name])
    except (TypeError, ValueError):
        raise ControlError(f"field {name!r} must be {kind.__name__}, not {body[name]!r}") from None


class Control:
    """The actions behind the endpoints; each runs on the stand-in's loop."""

    def __init__(self, standin) -> None:
        self.standin = standin
        self.world = standin.world

    def _key(self, body: dict, sender: int) -> tuple:
        if "group" in body:
            chat = self.world.chat(_field(body, "group", int))
            return (chat.kind, chat.id)
        return self.world.dm_key(sender, self.world.user(_field(body, "to", int)).id)

    def users(self, body: dict) -> dict:
        phone = body.get("phone") or f"99966{len(self.world.users) % 10}{1000 + len(self.world.users):04d}"
        user = self.world.create_user(
            phone=phone,
            first_name=_field(body, "first_name"),
            username=body.get("username", ""),
            password=body.get("password"),
            user_id=_field(body, "id", int) if "id" in body else None,
            bot=bool(body.get("bot")),
        )
        return {"id": user.id, "phone": "+" + user.phone, "username": user.username, "bot": user.bot}

    def groups(self, body: dict) -> dict:
        chat = self.world.create_group(
            title=_field(body, "title"),
            member_ids=[int(m) for m in _field(body, "member_ids", list)],
            supergroup=bool(body.get("supergroup")),
            forum=bool(body.get("forum")),
        )
        return {
            "id": chat.id,
            "kind": chat.kind,
            "peer_id": -chat.id if chat.kind == "chat" else -(10**12 + chat.id),
        }

    def topics(self, body: dict) -> dict:
        message = self.world.create_topic(
            self.world.user(_field(body, "from", int)).id, _field(body, "group", int), _field(body, "title")
        )
        return {"topic_id": message.id}

    def send(self, body: dict) -> dict:
        sender = self.world.user(_field(body, "from", int)).id
        key = self._key(body, sender)
        text, entities, mentions, media = str(body.get("text", "")), [], (), None
        if "mention" in body:
            target = self.world.user(_field(body, "mention", int))
            handle = f"@{target.username}"
            entities = [types.MessageEntityMention(offset=len(text) + 1 if text else 0, length=len(handle))]
            text = f"{text} {handle}" if text else handle
            mentions = (target.id,)
        if body.get("photo"):
            media = types.MessageMediaPhoto(photo=self.world.photo)
        if body.get("sticker"):
            _set, docs = next(iter(self.world.sticker_sets.values()))
            doc = next(
                (d for d in docs if any(getattr(a, "alt", None) == body["sticker"] for a in d.attributes)),
                docs[0],
            )
            media = types.MessageMediaDocument(document=doc)
        message, _pts, _new = self.world.send(
            sender,
            key,
            text,
            reply_to=body.get("reply_to"),
            media=media,
            mentions=mentions,
            entities=entities,
            topic=self._topic(body, key),
        )
        return {"message_id": message.id}

    def _topic(self, body: dict, key: tuple) -> int | None:
        if "topic" not in body:
            return None
        topic = _field(body, "topic", int)
        chat = self.world.chats.get(key[1]) if key[0] != "dm" else None
        if chat is None or topic not in chat.topics:
            raise ControlError(f"topic {topic} is no topic of this chat: create it with POST /topics")
        return topic

    def typing(self, body: dict) -> dict:
        sender = self.world.user(_field(body, "from", int)).id
        self.world.typing(
            sender,
            self.world.dm_key(sender, self.world.user(_field(body, "to", int)).id),
            cancel=bool(body.get("cancel")),
        )
        return {}

    def react(self, body: dict) -> dict:
        sender = _field(body, "from", int)
        self.world.react(
            sender, self._key(body, sender), _field(body, "message_id", int), str(body.get("emoji", ""))
        )
        return {}

    def edit(self, body: dict) -> dict:
        sender = _field(body, "from", int)
        self.world.edit(
            sender, self._key(body, sender), _field(body, "message_id", int), _field(body, "text")
        )
        return {}

    def delete(self, body: dict) -> dict:
        sender = _field(body, "from", int)
        self.world.delete(
            sender, self._key(body, sender), [int(i) for i in _field(body, "message_ids", list)]
        )
        return {}

    def block(self, body: dict) -> dict:
        self.world.user(_field(body, "from", int)).blocked.add(self.world.user(_field(body, "user", int)).id)
        return {}

    def flood_wait(self, body: dict) -> dict:
        self.standin.inject_flood_wait(
            _field(body, "method"), _field(body, "seconds", int), times=int(body.get("times", 1))
        )
        return {}

    def messages(self, query: dict) -> dict:
        if "group" in query:
            chat = self.world.chat(int(query["group"][0]))
            key = (chat.kind, chat.id)
        else:
            key = self.world.dm_key(int(query["user"][0]), int(query["peer"][0]))
        return {
            "messages": [
                {
                    "id": m.id,
                    "from": m.sender,
                    "text": m.text,
                    "random_id": m.random_id,
                    "reply_to": m.reply_to,
                    "media": type(m.media).__name__ if m.media else None,
                    "reactions": m.reactions,
                    "date": m.date,
                    "topic": m.topic,
                }
                for m in self.world.history(key)
            ]
        }

    def calls(self, query: dict) -> dict:
        return {
            "calls": [
                {
                    "method": c.method,
                    "time": c.time,
                    "user_id": c.user_id,
                    "connection": c.connection,
                    "error": c.error,
                }
                for c in self.standin.calls
            ]
        }


def serve_control(standin, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Start the control interface in a thread; `.server_address` says where it listens."""
    control = Control(standin)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _dispatch(self, action: str, arg: dict) -> None:
            fn = getattr(control, action, None) if action and not action.startswith("_") else None
            if fn is None:
                self._answer(404, {"error": f"no endpoint /{action}"})
                return
            try:
                self._answer(200, standin.run(fn, arg))
            except (ControlError, WorldError) as exc:
                self._answer(400, {"error": str(exc)})

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            self._dispatch(url.path.strip("/"), parse_qs(url.query))

        def do_POST(self) -> None:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            except json.JSONDecodeError as exc:
                self._answer(400, {"error": f"the body is not JSON: {exc}"})
                return
            self._dispatch(urlsplit(self.path).path.strip("/"), body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=httpd.serve_forever, name="telegram-standin-control", daemon=True).start()
    return httpd
