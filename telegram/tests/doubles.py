"""A stand-in for the TelegramClient calls the transport makes: the network edge, nothing more.

Requests are recorded as the real TL request objects; answers are real TL result objects or real
`telethon.errors` exceptions, queued per test.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from telethon import utils
from telethon.tl import functions, types

ME_ID = 7000001
ME_USERNAME = "Heidi_Bot"
DATE = dt.datetime(2026, 1, 5, 12, 0, tzinfo=dt.UTC)


def me_user() -> types.User:
    return types.User(id=ME_ID, is_self=True, access_hash=11, first_name="Heidi", username=ME_USERNAME)


def user(uid: int, first: str = "Ann", username: str | None = "ann") -> types.User:
    return types.User(id=uid, access_hash=uid * 3, first_name=first, username=username)


def channel(cid: int, title: str = "Chan", *, megagroup: bool = False) -> types.Channel:
    return types.Channel(
        id=cid,
        title=title,
        photo=types.ChatPhotoEmpty(),
        date=DATE,
        access_hash=cid * 5,
        megagroup=megagroup or None,
        broadcast=None if megagroup else True,
    )


class FakeTelegramClient:
    def __init__(self, session: Any = None) -> None:
        self.session = session
        self.requests: list[Any] = []
        self.answers: list[Any] = []
        self.handlers: list[Callable] = []
        self.connected = False
        self.authorized = True
        self.get_me_error: BaseException | None = None
        self.me = me_user()
        self.resolved: list[int] = []
        self.sent_by_random_id: dict[int, Any] = {}
        self.downloads: list[Path] = []
        self.server: Callable[[Any], Any] | None = None  # answers when no answer is queued
        self._updates_error: BaseException | None = (
            None  # what TelegramClient keeps when its update loop stops
        )

    # --- what TelegramClient offers -----------------------------------------------------------
    def add_event_handler(self, callback, event=None) -> None:
        self.handlers.append(callback)

    async def connect(self) -> None:
        self.connected = True

    async def disconnect(self) -> None:
        self.connected = False

    def is_connected(self) -> bool:
        return self.connected

    async def get_me(self) -> types.User | None:
        # Like TelegramClient.get_me: None when Telegram answers 401, any other error raised.
        if self.get_me_error is not None:
            raise self.get_me_error
        return self.me if self.authorized else None

    async def get_input_entity(self, peer_id: int):
        self.resolved.append(peer_id)
        if peer_id == 404:
            raise ValueError(f"Could not find the input entity for PeerUser(user_id={peer_id})")
        peer_id_, kind = utils.resolve_id(peer_id)
        if kind is types.PeerUser:
            return types.InputPeerUser(peer_id_, peer_id_ * 3)
        if kind is types.PeerChat:
            return types.InputPeerChat(peer_id_)
        return types.InputPeerChannel(peer_id_, peer_id_ * 5)

    async def __call__(self, request):
        self.requests.append(request)
        if self.answers:
            answer = self.answers.pop(0)
        else:
            answer = self.server(request) if self.server is not None else None
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(request)
        return answer

    async def download_media(self, message, file: str):
        path = Path(file)
        path.write_bytes(b"media bytes")
        self.downloads.append(path)
        return str(path)

    # --- test helpers -------------------------------------------------------------------------
    def answer(self, *answers: Any) -> FakeTelegramClient:
        self.answers.extend(answers)
        return self

    async def dispatch(self, update) -> None:
        for handler in self.handlers:
            await handler(update)

    def of_type(self, cls) -> list[Any]:
        return [r for r in self.requests if isinstance(r, cls)]


def telegram_send(client: FakeTelegramClient, *, message_id: int) -> Callable:
    """Answer SendMessage/SendMedia like Telegram: a repeated random_id returns the earlier message."""

    def respond(request):
        if request.random_id not in client.sent_by_random_id:
            peer = utils.get_peer(request.peer)
            msg = types.Message(
                id=message_id + len(client.sent_by_random_id),
                peer_id=peer,
                date=DATE,
                message=getattr(request, "message", ""),
                out=True,
            )
            client.sent_by_random_id[request.random_id] = msg
        msg = client.sent_by_random_id[request.random_id]
        return types.Updates(
            updates=[
                types.UpdateMessageID(id=msg.id, random_id=request.random_id),
                types.UpdateNewMessage(message=msg, pts=10, pts_count=1),
            ],
            users=[],
            chats=[],
            date=DATE,
            seq=0,
        )

    return respond


def is_send(request) -> bool:
    return isinstance(request, (functions.messages.SendMessageRequest, functions.messages.SendMediaRequest))


class ChatServer:
    """Telegram's side of the dialog list and of chat history, for the reconciler.

    `messages.GetDialogs` lists every chat with its newest message and read mark;
    `messages.GetHistory` pages the way Telegram does: newest first from the position of `offset_id`,
    shifted by `add_offset`, at most `limit`, filtered by `min_id`/`max_id`. `fail_history` maps the
    n-th history request (1-based) to the error Telegram answers it with.
    """

    def __init__(self) -> None:
        self.chats: dict[int, list[types.Message]] = {}
        self.read_inbox: dict[int, int] = {}
        self.users: list[types.User] = []
        self.fail_history: dict[int, BaseException] = {}
        self.history_requests = 0

    def add_dm(self, other: types.User, ids, *, read_up_to: int = 0) -> None:
        self.users.append(other)
        self.read_inbox[other.id] = read_up_to
        self.chats[other.id] = [
            types.Message(
                id=i,
                peer_id=types.PeerUser(other.id),
                from_id=types.PeerUser(other.id),
                date=DATE,
                message=f"m{i}",
            )
            for i in ids
        ]

    def __call__(self, request):
        if isinstance(request, functions.messages.GetDialogsRequest):
            return self.dialogs()
        if isinstance(request, functions.messages.GetHistoryRequest):
            self.history_requests += 1
            error = self.fail_history.get(self.history_requests)
            if error is not None:
                raise error
            return self.history(request)
        raise AssertionError(f"ChatServer does not answer {type(request).__name__}")

    def dialogs(self) -> types.messages.Dialogs:
        dialogs = [
            types.Dialog(
                peer=types.PeerUser(peer),
                top_message=max(m.id for m in messages),
                read_inbox_max_id=self.read_inbox[peer],
                read_outbox_max_id=0,
                unread_count=sum(1 for m in messages if m.id > self.read_inbox[peer]),
                unread_mentions_count=0,
                unread_reactions_count=0,
                unread_poll_votes_count=0,
                notify_settings=types.PeerNotifySettings(),
            )
            for peer, messages in self.chats.items()
        ]
        tops = [max(self.chats[utils.get_peer_id(d.peer)], key=lambda m: m.id) for d in dialogs]
        return types.messages.Dialogs(dialogs=dialogs, messages=tops, chats=[], users=self.users)

    def history(self, request) -> types.messages.Messages:
        newest_first = sorted(self.chats[utils.get_peer_id(request.peer)], key=lambda m: -m.id)
        pos = 0
        if request.offset_id:
            pos = next((i for i, m in enumerate(newest_first) if m.id < request.offset_id), len(newest_first))
        start = pos + request.add_offset
        page = newest_first[max(start, 0) : max(start + request.limit, 0)]
        page = [m for m in page if m.id > request.min_id and (not request.max_id or m.id < request.max_id)]
        return types.messages.Messages(messages=page, topics=[], chats=[], users=self.users)
