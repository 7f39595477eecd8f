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
        self.me = me_user()
        self.resolved: list[int] = []
        self.sent_by_random_id: dict[int, Any] = {}
        self.downloads: list[Path] = []

    # --- what TelegramClient offers -----------------------------------------------------------
    def add_event_handler(self, callback, event=None) -> None:
        self.handlers.append(callback)

    async def connect(self) -> None:
        self.connected = True

    async def disconnect(self) -> None:
        self.connected = False

    def is_connected(self) -> bool:
        return self.connected

    async def is_user_authorized(self) -> bool:
        return self.authorized

    async def get_me(self) -> types.User:
        return self.me

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
        answer = self.answers.pop(0) if self.answers else None
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
