# ruff: noqa: F811  (the account server fixtures are imported by name and used as arguments)
"""The account operations of TelethonTransport against Telegram's side at the network edge."""

from __future__ import annotations

import pytest
from telethon.tl import functions, types

from agents.telegram_targets import TargetError
from conversations.transport.base import PermanentError
from telegram.account import MUTE_FOREVER

from .account_server import fake_client, server  # noqa: F401
from .conftest import run


def test_muting_sets_notify_settings_for_ever_and_unmuting_clears_them(transport, fake_client, server):
    run(transport.set_muted, 501, True)
    (request,) = fake_client.of_type(functions.account.UpdateNotifySettingsRequest)
    assert request.peer == types.InputNotifyPeer(peer=types.InputPeerUser(501, 501 * 3))
    assert server.mute_until[501] == MUTE_FOREVER
    assert run(transport.is_muted, 501) is True  # the cache follows the change
    run(transport.set_muted, 501, False)
    assert server.mute_until[501] == 0
    assert run(transport.is_muted, 501) is False


def test_joining_by_username_resolves_then_joins_the_channel(transport, fake_client):
    details = run(transport.join_chat, "https://t.me/cindyfans")
    (resolve,) = fake_client.of_type(functions.contacts.ResolveUsernameRequest)
    assert resolve.username == "cindyfans"
    (join,) = fake_client.of_type(functions.channels.JoinChannelRequest)
    assert join.channel == types.InputChannel(1500, 1500 * 5)
    assert (details.peer_id, details.kind, details.title) == (-1000000001500, "group", "Cindy fans")


def test_joining_by_invite_link_imports_the_invite(transport, fake_client):
    details = run(transport.join_chat, "https://t.me/+AbCdEfGh12")
    (request,) = fake_client.of_type(functions.messages.ImportChatInviteRequest)
    assert request.hash == "AbCdEfGh12"
    assert (details.peer_id, details.title) == (-77, "Book club")


def test_joining_an_unknown_username_is_a_permanent_error(transport):
    with pytest.raises(PermanentError) as caught:
        run(transport.join_chat, "@nobody_here")
    assert caught.value.reason == "USERNAME_NOT_OCCUPIED"


def test_joining_a_user_is_refused_with_the_reason(transport):
    with pytest.raises(PermanentError, match="is a user, not a group"):
        run(transport.join_chat, "@bob_smith")


def test_a_target_that_is_not_a_chat_is_refused_before_telegram(transport, fake_client):
    with pytest.raises(TargetError, match="not a chat to join"):
        run(transport.join_chat, "hello world")
    assert fake_client.requests == []


def test_leaving_a_channel_and_a_basic_group(transport, fake_client, server):
    run(transport.leave_chat, -1000000001500)
    run(transport.leave_chat, -77)
    assert server.left == [1500, 77]
    (basic,) = fake_client.of_type(functions.messages.DeleteChatUserRequest)
    assert basic.user_id == types.InputUserSelf()
    with pytest.raises(PermanentError, match="private chat"):
        run(transport.leave_chat, 501)


def test_the_profile_is_read_with_its_photos_saved(transport, fake_client, tmp_path):
    profile = run(transport.get_profile, photo_dir=tmp_path)
    assert (profile.first_name, profile.username, profile.about) == ("Heidi", "Heidi_Bot", "Hi there")
    assert profile.about_limit == 70
    (photo,) = profile.photos
    assert photo.photo_id == 9001
    assert (tmp_path / "9001.jpg").read_bytes() == b"media bytes"


def test_profile_changes_reach_telegram(transport, server):
    run(transport.update_profile, first_name="Heidi", last_name="Klum", about="New bio")
    run(transport.set_username, "heidi_new")
    run(transport.set_username, "heidi_new")  # unchanged: Telegram's USERNAME_NOT_MODIFIED is no error
    assert (server.last_name, server.about, server.username) == ("Klum", "New bio", "heidi_new")


def test_a_taken_username_says_so(transport):
    with pytest.raises(PermanentError, match="@taken_name is taken by another account"):
        run(transport.set_username, "taken_name")


def test_profile_photos_are_uploaded_and_deleted(transport, server, tmp_path):
    picture = tmp_path / "me.jpg"
    picture.write_bytes(b"\xff\xd8\xff jpeg")
    run(transport.add_profile_photo, picture)
    assert server.uploaded == ["me.jpg"]
    newest = server.photos[0].id
    run(transport.delete_profile_photo, newest)
    assert [p.id for p in server.photos] == [9001]
    with pytest.raises(PermanentError, match="no profile photo 4"):
        run(transport.delete_profile_photo, 4)


def test_contacts_are_listed_added_and_deleted(transport, fake_client, server):
    (ann,) = run(transport.contacts)
    assert (ann.user_id, ann.first_name, ann.username, ann.mutual) == (501, "Ann", "ann", True)
    added = run(transport.add_contact, "@bobby", first_name="Bobby", last_name="B")
    assert (added.user_id, added.first_name, added.last_name) == (502, "Bobby", "B")
    (add,) = fake_client.of_type(functions.contacts.AddContactRequest)
    assert add.id == types.InputUser(502, 502 * 3)
    run(transport.delete_contacts, [501])
    assert list(server.contacts) == [502]


def test_a_contact_by_user_id_uses_the_known_input_peer(transport, server):
    run(transport.add_contact, "502", first_name="Bob")
    assert 502 in server.contacts
