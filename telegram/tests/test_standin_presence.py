"""Presence, contacts and write rights through `TelethonTransport` and the MTProto stand-in."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from telethon.tl import types

from conversations.transport.base import WRITE_REFUSALS, NewMessage, PermanentError
from telegram.normalize import write_refusal

from .test_standin_transport import connected, next_updates, standin, world  # noqa: F401

NO_SEND = types.ChatBannedRights(until_date=None, send_messages=True)


def _channel(**fields) -> types.Channel:
    return types.Channel(id=5, title="C", photo=types.ChatPhotoEmpty(), date=None, **fields)


@pytest.mark.parametrize(
    ("entity", "refusal"),
    [
        (_channel(megagroup=True), ""),
        (_channel(broadcast=True), WRITE_REFUSALS["read_only"]),
        (_channel(broadcast=True, creator=True), ""),
        (_channel(broadcast=True, admin_rights=types.ChatAdminRights(post_messages=True)), ""),
        (
            _channel(broadcast=True, admin_rights=types.ChatAdminRights(delete_messages=True)),
            WRITE_REFUSALS["read_only"],
        ),
        (_channel(megagroup=True, default_banned_rights=NO_SEND), WRITE_REFUSALS["members_restricted"]),
        (
            _channel(megagroup=True, default_banned_rights=NO_SEND, admin_rights=types.ChatAdminRights()),
            "",
        ),
        (_channel(megagroup=True, banned_rights=NO_SEND), WRITE_REFUSALS["restricted"]),
        (
            _channel(
                megagroup=True,
                banned_rights=types.ChatBannedRights(until_date=None, view_messages=True),
            ),
            WRITE_REFUSALS["banned"],
        ),
        (_channel(megagroup=True, left=True), WRITE_REFUSALS["left"]),
        (types.ChannelForbidden(id=5, access_hash=1, title="C"), WRITE_REFUSALS["left"]),
        (
            types.Chat(
                id=6,
                title="G",
                photo=types.ChatPhotoEmpty(),
                participants_count=2,
                date=None,
                version=1,
                default_banned_rights=NO_SEND,
            ),
            WRITE_REFUSALS["members_restricted"],
        ),
        (types.User(id=7, first_name="Ann"), ""),
        (None, ""),
    ],
)
def test_the_write_refusal_follows_the_entity_rights(entity, refusal):
    assert write_refusal(entity) == refusal


def test_the_online_status_is_pushed_to_the_dm_partners(world):  # noqa: F811
    stand, agent, me, bob = world
    pushed: list[tuple[int, object]] = []

    def spy():
        original = stand.world.push

        def push(user_id, updates):
            pushed.append((user_id, updates))
            original(user_id, updates)

        stand.world.push = push
        return original

    async def run():
        transport = await connected(agent)
        await transport.send_text(bob.id, "hello Bob", random_id=7001)
        original = stand.run(spy)
        try:
            await transport.set_online(True)
            online = stand.run(lambda: stand.world.users[me.id].online)
            await transport.set_online(False)
            offline = stand.run(lambda: stand.world.users[me.id].online)
        finally:
            stand.run(lambda: setattr(stand.world, "push", original))
        await transport.disconnect()
        return online, offline

    online, offline = async_to_sync(run)()
    assert (online, offline) == (True, False)
    statuses = [
        (uid, type(u.status).__name__)
        for uid, updates in pushed
        for u in updates.updates
        if isinstance(u, types.UpdateUserStatus) and u.user_id == me.id
    ]
    assert statuses == [(bob.id, "UserStatusOnline"), (bob.id, "UserStatusOffline")]
    assert [c.error for c in stand.calls_of("account.updateStatus")][-2:] == ["", ""]


def test_a_partner_is_added_to_the_contacts_under_their_own_name(world):  # noqa: F811
    stand, agent, me, bob = world

    async def run():
        transport = await connected(agent)
        added = await transport.add_contact(str(bob.id), first_name="")
        contacts = await transport.contacts()
        await transport.disconnect()
        return added, contacts

    added, contacts = async_to_sync(run)()
    assert (added.user_id, added.first_name) == (bob.id, "Bob")
    assert [c.user_id for c in contacts] == [bob.id]
    assert stand.run(lambda: stand.world.users[me.id].contacts) == {bob.id}
    (call,) = stand.calls_of("contacts.addContact")[-1:]
    assert call.error == ""


def test_restricted_banned_and_read_only_chats_are_reported_and_refuse_sends(world):  # noqa: F811
    stand, agent, me, bob = world

    def chats():
        make = stand.world.create_group
        read_only = make(title="News", member_ids=[me.id, bob.id], supergroup=True)
        read_only.broadcast, read_only.admins = True, {bob.id}
        quiet = make(title="Quiet", member_ids=[me.id, bob.id])
        quiet.members_write, quiet.admins = False, {bob.id}
        restricted = make(title="Strict", member_ids=[me.id, bob.id], supergroup=True)
        restricted.restricted = {me.id}
        return read_only, quiet, restricted

    read_only, quiet, restricted = stand.run(chats)
    expected = {
        read_only.id: WRITE_REFUSALS["read_only"],
        quiet.id: WRITE_REFUSALS["members_restricted"],
        restricted.id: WRITE_REFUSALS["restricted"],
    }

    async def run():
        transport = await connected(agent)
        seen = {}
        for chat in (read_only, quiet, restricted):
            key = ("chat", chat.id) if chat.kind == "chat" else ("channel", chat.id)
            stand.run(stand.world.send, bob.id, key, "@heidi are you there?")
            [new] = await next_updates(transport, NewMessage)
            peer = new.message.peer_id
            details = await transport.get_details(peer)
            try:
                await transport.send_text(peer, "yes", random_id=7100 + chat.id % 1000)
                refused = ""
            except PermanentError as exc:
                refused = exc.reason
            seen[chat.id] = (new.message.cannot_write, details.cannot_write, refused)
        await transport.disconnect()
        return seen

    seen = async_to_sync(run)()
    assert seen == {
        read_only.id: (expected[read_only.id],) * 2 + ("CHAT_ADMIN_REQUIRED",),
        quiet.id: (expected[quiet.id],) * 2 + ("CHAT_WRITE_FORBIDDEN",),
        restricted.id: (expected[restricted.id],) * 2 + ("USER_BANNED_IN_CHANNEL",),
    }
