"""The account side of `TelethonTransport`: notification settings, joining and leaving chats, the
profile (names, bio, username, photos) and contacts, each one raw MTProto request."""

from __future__ import annotations

from pathlib import Path

from telethon import utils
from telethon.tl import functions, types

from agents.telegram_targets import parse_join_target, parse_user_target
from conversations.transport.base import (
    ChatDetails,
    ContactInfo,
    PermanentError,
    ProfileInfo,
    ProfilePhoto,
    TransportError,
)

#: Telegram's "for ever" for a mute: the largest date its 32-bit fields hold.
MUTE_FOREVER = 2**31 - 1
MAX_PROFILE_PHOTOS = 20
USERNAME_ERRORS = {
    "USERNAME_OCCUPIED": "is taken by another account",
    "USERNAME_INVALID": "is not valid (5 to 32 letters, digits or underscores, starting with a letter)",
    "USERNAME_PURCHASE_AVAILABLE": "is for sale on fragment.com and cannot simply be set",
}


def _contact(user: types.User, *, mutual: bool = False) -> ContactInfo:
    return ContactInfo(
        user_id=user.id,
        first_name=user.first_name or "",
        last_name=user.last_name or "",
        username=user.username or "",
        phone=user.phone or "",
        mutual=mutual,
    )


class TelethonAccount:
    """Mixed into `TelethonTransport`; relies on its `_call`, `_peer_call`, `_details` and caches."""

    async def set_muted(self, peer_id: int, muted: bool) -> None:
        settings = types.InputPeerNotifySettings(mute_until=MUTE_FOREVER if muted else 0)
        await self._peer_call(
            peer_id,
            lambda peer: functions.account.UpdateNotifySettingsRequest(
                peer=types.InputNotifyPeer(peer=peer), settings=settings
            ),
        )
        self._muted.set(peer_id, muted)

    async def join_chat(self, target: str) -> ChatDetails:
        parsed = parse_join_target(target)
        if parsed.kind == "invite":
            try:
                result = await self._call(functions.messages.ImportChatInviteRequest(hash=parsed.value))
            except PermanentError as exc:
                if exc.reason != "USER_ALREADY_PARTICIPANT":
                    raise
                invite = await self._call(functions.messages.CheckChatInviteRequest(hash=parsed.value))
                chat = getattr(invite, "chat", None)
                if chat is None:
                    raise
                self._remember_entities([chat])
                return self._details(utils.get_peer(chat))
        else:
            resolved = await self._call(functions.contacts.ResolveUsernameRequest(username=parsed.value))
            self._remember_entities([*resolved.users, *resolved.chats])
            channel = next((c for c in resolved.chats if isinstance(c, types.Channel)), None)
            if channel is None:
                raise PermanentError(
                    "NOT_A_CHANNEL", f"@{parsed.value} is a user, not a group or channel: open a chat instead"
                )
            result = await self._call(
                functions.channels.JoinChannelRequest(channel=utils.get_input_channel(channel))
            )
        chats = [c for c in getattr(result, "chats", []) if isinstance(c, (types.Chat, types.Channel))]
        if not chats:
            raise TransportError(f"Telegram's answer to joining {target!r} names no chat")
        self._remember_entities([*getattr(result, "users", []), *chats])
        return self._details(utils.get_peer(chats[0]))

    async def leave_chat(self, peer_id: int) -> None:
        def build(peer):
            if isinstance(peer, types.InputPeerChannel):
                return functions.channels.LeaveChannelRequest(channel=utils.get_input_channel(peer))
            if isinstance(peer, types.InputPeerChat):
                return functions.messages.DeleteChatUserRequest(
                    chat_id=peer.chat_id, user_id=types.InputUserSelf()
                )
            raise PermanentError("PEER_ID_INVALID", f"peer {peer_id} is a private chat: only groups are left")

        await self._peer_call(peer_id, build)

    # --- profile ----------------------------------------------------------------------------------

    async def _own_photos(self) -> list[types.Photo]:
        result = await self._call(
            functions.photos.GetUserPhotosRequest(
                user_id=types.InputUserSelf(), offset=0, max_id=0, limit=MAX_PROFILE_PHOTOS
            )
        )
        return [p for p in result.photos if isinstance(p, types.Photo)]

    async def get_profile(self, *, photo_dir: Path) -> ProfileInfo:
        full = await self._call(functions.users.GetFullUserRequest(id=types.InputUserSelf()))
        me = next(u for u in full.users if isinstance(u, types.User) and u.id == full.full_user.id)
        self._remember_entities(full.users)
        photo_dir = Path(photo_dir)
        photos = []
        for photo in await self._own_photos():
            photo_dir.mkdir(parents=True, exist_ok=True)
            target = photo_dir / f"{photo.id}.jpg"
            if not target.is_file():
                # Whole or not at all: a page may be showing the previous read's photos meanwhile.
                partial = target.with_suffix(".part")
                saved = await self._guard(self._require_client().download_media(photo, file=str(partial)))
                Path(saved or partial).replace(target)
            photos.append(ProfilePhoto(photo_id=photo.id, date=photo.date, path=str(target)))
        return ProfileInfo(
            user_id=me.id,
            first_name=me.first_name or "",
            last_name=me.last_name or "",
            username=me.username or "",
            about=full.full_user.about or "",
            about_limit=140 if me.premium else 70,
            photos=tuple(photos),
        )

    async def update_profile(self, *, first_name: str, last_name: str, about: str) -> None:
        await self._call(
            functions.account.UpdateProfileRequest(first_name=first_name, last_name=last_name, about=about)
        )

    async def set_username(self, username: str) -> None:
        try:
            await self._call(functions.account.UpdateUsernameRequest(username=username))
        except PermanentError as exc:
            if exc.reason == "USERNAME_NOT_MODIFIED":
                return
            if exc.reason in USERNAME_ERRORS:
                raise PermanentError(exc.reason, f"@{username} {USERNAME_ERRORS[exc.reason]}") from exc
            raise

    async def add_profile_photo(self, path: Path) -> None:
        client = self._require_client()
        self._check_pause(None)
        uploaded = await self._guard(client.upload_file(str(path)))
        await self._call(functions.photos.UploadProfilePhotoRequest(file=uploaded))

    async def delete_profile_photo(self, photo_id: int) -> None:
        photo = next((p for p in await self._own_photos() if p.id == photo_id), None)
        if photo is None:
            raise PermanentError("PHOTO_INVALID", f"the account has no profile photo {photo_id}")
        await self._call(functions.photos.DeletePhotosRequest(id=[utils.get_input_photo(photo)]))

    # --- contacts ---------------------------------------------------------------------------------

    async def contacts(self) -> list[ContactInfo]:
        result = await self._call(functions.contacts.GetContactsRequest(hash=0))
        self._remember_entities(result.users)
        users = {u.id: u for u in result.users if isinstance(u, types.User)}
        return [
            _contact(users[c.user_id], mutual=bool(c.mutual)) for c in result.contacts if c.user_id in users
        ]

    async def _input_user(self, target: str) -> types.InputUser:
        who = parse_user_target(target)
        if isinstance(who, str):
            resolved = await self._call(functions.contacts.ResolveUsernameRequest(username=who))
            self._remember_entities(resolved.users)
            user = next((u for u in resolved.users if isinstance(u, types.User)), None)
            if user is None:
                raise PermanentError("NOT_A_USER", f"@{who} is a group or channel, not a person")
            return utils.get_input_user(user)
        peer = await self._input_peer(who)
        if not isinstance(peer, types.InputPeerUser):
            raise PermanentError("NOT_A_USER", f"{who} is a group or channel, not a person")
        return utils.get_input_user(peer)

    async def add_contact(self, target: str, *, first_name: str, last_name: str = "") -> ContactInfo:
        """Without a first name, the user's own names are used, as the original adds a DM partner."""
        user = await self._input_user(target)
        if not first_name:
            known = self._entities.get(user.user_id)
            if not isinstance(known, types.User):
                (known,) = await self._call(functions.users.GetUsersRequest(id=[user]))
            first_name = getattr(known, "first_name", None) or str(user.user_id)
            last_name = last_name or getattr(known, "last_name", None) or ""
        result = await self._call(
            functions.contacts.AddContactRequest(
                id=user,
                first_name=first_name,
                last_name=last_name,
                phone="",
                add_phone_privacy_exception=False,
            )
        )
        self._remember_entities(getattr(result, "users", []))
        added = next(
            (u for u in getattr(result, "users", []) if getattr(u, "id", None) == user.user_id), None
        )
        if isinstance(added, types.User):
            return _contact(added)
        return ContactInfo(user_id=user.user_id, first_name=first_name, last_name=last_name)

    async def delete_contacts(self, user_ids: list[int]) -> None:
        users = []
        for user_id in user_ids:
            peer = await self._input_peer(user_id)
            if isinstance(peer, types.InputPeerUser):
                users.append(utils.get_input_user(peer))
        if users:
            await self._call(functions.contacts.DeleteContactsRequest(id=users))
