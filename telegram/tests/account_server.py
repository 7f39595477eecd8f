"""Telegram's side of the account requests (profile, photos, contacts, mute, join/leave), answering
the transport's raw requests with real TL objects and real `telethon.errors`, keeping state so that a
change is seen by the next read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from telethon import errors, utils
from telethon.tl import functions, types

from .doubles import DATE, ME_ID, FakeTelegramClient, channel, user


class AccountServer:
    def __init__(self) -> None:
        self.first_name, self.last_name, self.username, self.about = "Heidi", "", "Heidi_Bot", "Hi there"
        self.taken_usernames = {"taken_name"}
        self.photos: list[types.Photo] = [self.photo(9001)]
        self.contacts: dict[int, types.User] = {501: user(501, "Ann", "ann")}
        self.people: dict[str, Any] = {
            "ann": user(501, "Ann", "ann"),
            "bobby": user(502, "Bob", "bobby"),
            "bob_smith": user(503, "Bob", "bob_smith"),
        }
        self.public = {"cindyfans": channel(1500, "Cindy fans", megagroup=True)}
        self.invites = {
            "AbCdEfGh12": types.Chat(
                id=77,
                title="Book club",
                photo=types.ChatPhotoEmpty(),
                participants_count=3,
                date=DATE,
                version=1,
            )
        }
        self.mute_until: dict[Any, Any] = {}
        self.left: list[Any] = []
        self.uploaded: list[str] = []

    @staticmethod
    def photo(photo_id: int) -> types.Photo:
        return types.Photo(
            id=photo_id,
            access_hash=photo_id * 7,
            file_reference=b"ref",
            date=DATE,
            sizes=[types.PhotoSize(type="x", w=640, h=640, size=1000)],
            dc_id=2,
        )

    def me(self) -> types.User:
        return types.User(
            id=ME_ID,
            is_self=True,
            access_hash=11,
            first_name=self.first_name,
            last_name=self.last_name or None,
            username=self.username or None,
        )

    def _updates(self, chat) -> types.Updates:
        return types.Updates(updates=[], users=[], chats=[chat], date=DATE, seq=0)

    def __call__(self, request):  # noqa: C901 (one branch per request type, as Telegram's dispatcher)
        if isinstance(request, functions.account.UpdateNotifySettingsRequest):
            self.mute_until[utils.get_peer_id(request.peer.peer)] = request.settings.mute_until
            return True
        if isinstance(request, functions.users.GetFullUserRequest):
            full = types.UserFull(
                id=ME_ID,
                settings=types.PeerSettings(),
                notify_settings=types.PeerNotifySettings(),
                common_chats_count=0,
                about=self.about or None,
            )
            return types.users.UserFull(full_user=full, chats=[], users=[self.me()])
        if isinstance(request, functions.photos.GetUserPhotosRequest):
            return types.photos.Photos(photos=list(self.photos), users=[])
        if isinstance(request, functions.account.UpdateProfileRequest):
            self.first_name, self.last_name, self.about = request.first_name, request.last_name, request.about
            return self.me()
        if isinstance(request, functions.account.UpdateUsernameRequest):
            if request.username in self.taken_usernames:
                raise errors.UsernameOccupiedError(request=request)
            if request.username == self.username:
                raise errors.UsernameNotModifiedError(request=request)
            self.username = request.username
            return self.me()
        if isinstance(request, functions.photos.UploadProfilePhotoRequest):
            new = self.photo(9001 + len(self.photos) + len(self.uploaded) + 1)
            self.uploaded.append(request.file.name)
            self.photos.insert(0, new)
            return types.photos.Photo(photo=new, users=[])
        if isinstance(request, functions.photos.DeletePhotosRequest):
            gone = {p.id for p in request.id}
            self.photos = [p for p in self.photos if p.id not in gone]
            return [p.id for p in request.id]
        if isinstance(request, functions.contacts.GetContactsRequest):
            users = list(self.contacts.values())
            return types.contacts.Contacts(
                contacts=[types.Contact(user_id=u.id, mutual=u.id == 501) for u in users],
                saved_count=0,
                users=users,
            )
        if isinstance(request, functions.contacts.ResolveUsernameRequest):
            name = request.username.lower()
            if name in self.public:
                chat = self.public[name]
                return types.contacts.ResolvedPeer(peer=utils.get_peer(chat), chats=[chat], users=[])
            if name in self.people:
                person = self.people[name]
                return types.contacts.ResolvedPeer(peer=types.PeerUser(person.id), chats=[], users=[person])
            raise errors.UsernameNotOccupiedError(request=request)
        if isinstance(request, functions.contacts.AddContactRequest):
            person = next(p for p in self.people.values() if p.id == request.id.user_id)
            added = types.User(
                id=person.id,
                access_hash=person.access_hash,
                first_name=request.first_name,
                last_name=request.last_name or None,
                username=person.username,
                contact=True,
            )
            self.contacts[person.id] = added
            return types.Updates(updates=[], users=[added], chats=[], date=DATE, seq=0)
        if isinstance(request, functions.contacts.DeleteContactsRequest):
            for input_user in request.id:
                self.contacts.pop(input_user.user_id, None)
            return types.Updates(updates=[], users=[], chats=[], date=DATE, seq=0)
        if isinstance(request, functions.channels.JoinChannelRequest):
            chat = next(c for c in self.public.values() if c.id == request.channel.channel_id)
            return self._updates(chat)
        if isinstance(request, functions.messages.ImportChatInviteRequest):
            if request.hash not in self.invites:
                raise errors.InviteHashInvalidError(request=request)
            return self._updates(self.invites[request.hash])
        if isinstance(request, functions.channels.LeaveChannelRequest):
            self.left.append(request.channel.channel_id)
            return types.Updates(updates=[], users=[], chats=[], date=DATE, seq=0)
        if isinstance(request, functions.messages.DeleteChatUserRequest):
            self.left.append(request.chat_id)
            return types.Updates(updates=[], users=[], chats=[], date=DATE, seq=0)
        raise AssertionError(f"AccountServer does not answer {type(request).__name__}")


class AccountClient(FakeTelegramClient):
    """The client double, plus the file upload a profile photo needs."""

    async def upload_file(self, file: str):
        return types.InputFile(id=1, parts=1, name=Path(file).name, md5_checksum="")


@pytest.fixture
def server() -> AccountServer:
    return AccountServer()


@pytest.fixture
def fake_client(server: AccountServer) -> AccountClient:
    """Replaces the plain client double: this one answers account requests through `server`."""
    client = AccountClient()
    client.server = server
    return client
