"""Presence, contacts and write rights in the stand-in, as Telegram has them.

- `account.updateStatus` sets the account online or offline and pushes `UpdateUserStatus` to the users
  it has a private chat with or who have it in their contacts (whom Telegram tells).
- `contacts.addContact` / `contacts.getContacts` keep each account's contacts; a user shows
  `contact=True` only to the accounts that added it.
- A group or channel may refuse writing: a broadcast channel lets only its admins post, a restricted
  group (`members_write = False`) only its admins write, and restricted or banned members of a
  supergroup cannot write. Their TL views carry the rights a client reads (`admin_rights`,
  `banned_rights`, `default_banned_rights`), and a send is answered as Telegram answers it.
"""

from __future__ import annotations

import time
from typing import Any

from telethon.tl import functions, types

from .rpc import RpcFail, handles

#: How long Telegram's clients take an "online" status to last unless it is renewed.
ONLINE_EXPIRES_SECONDS = 300


def user_status(user: Any):
    """The TL status a user shows: None until the account set one."""
    if user.online is None:
        return None
    if user.online:
        return types.UserStatusOnline(expires=int(time.time()) + ONLINE_EXPIRES_SECONDS)
    return types.UserStatusOffline(was_online=user.status_at or int(time.time()))


def chat_rights(chat: Any, viewer: int | None) -> dict[str, Any]:
    """The rights fields of a group's or channel's TL view, as `viewer` sees them."""
    rights: dict[str, Any] = {}
    if viewer is not None and viewer in chat.admins:
        rights["admin_rights"] = types.ChatAdminRights(post_messages=True, delete_messages=True)
    if not chat.members_write:
        rights["default_banned_rights"] = types.ChatBannedRights(until_date=None, send_messages=True)
    if chat.kind != "chat" and viewer is not None:
        if viewer in chat.banned:
            rights["banned_rights"] = types.ChatBannedRights(
                until_date=None, view_messages=True, send_messages=True
            )
        elif viewer in chat.restricted:
            rights["banned_rights"] = types.ChatBannedRights(until_date=None, send_messages=True)
    return rights


def write_refused(chat: Any, user_id: int) -> RpcFail | None:
    """Telegram's answer to `user_id` sending in `chat`, or None when the send may go ahead."""
    if user_id in chat.banned or user_id in chat.restricted:
        return RpcFail(400, "USER_BANNED_IN_CHANNEL")
    if user_id in chat.admins:
        return None
    if chat.broadcast:
        return RpcFail(403, "CHAT_ADMIN_REQUIRED")
    if not chat.members_write:
        return RpcFail(403, "CHAT_WRITE_FORBIDDEN")
    return None


class PresenceApi:
    """A mixin of `api.Api` (which sets `world` and `_me`)."""

    @handles(functions.account.UpdateStatusRequest)
    def update_status(self, conn, request):
        me = self._me(conn)
        user = self.world.users[me]
        user.online = not request.offline
        user.status_at = int(time.time())
        status = user_status(user)
        told = {uid for uid, other in self.world.users.items() if me in other.contacts}
        for key in self.world.messages:
            if key[0] == "dm" and me in key[1:]:
                told.add(key[2] if key[1] == me else key[1])
        for uid in sorted(told - {me}):
            update = types.UpdateUserStatus(user_id=me, status=status)
            self.world.push(
                uid,
                types.Updates(
                    updates=[update],
                    users=[self.world.tl_user(me, uid)],
                    chats=[],
                    date=int(time.time()),
                    seq=0,
                ),
            )
        return True

    @handles(functions.contacts.AddContactRequest)
    def add_contact(self, conn, request):
        me = self._me(conn)
        uid = self._input_user(me, request.id)
        self.world.users[me].contacts.add(uid)
        return types.Updates(
            updates=[],
            users=[self.world.tl_user(uid, me)],
            chats=[],
            date=int(time.time()),
            seq=0,
        )

    @handles(functions.contacts.GetContactsRequest)
    def get_contacts(self, conn, request):
        me = self._me(conn)
        ids = sorted(self.world.users[me].contacts)
        return types.contacts.Contacts(
            contacts=[types.Contact(user_id=uid, mutual=me in self.world.users[uid].contacts) for uid in ids],
            saved_count=0,
            users=[self.world.tl_user(uid, me) for uid in ids],
        )
