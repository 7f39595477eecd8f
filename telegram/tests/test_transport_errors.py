"""Flood waits, permanent and auth errors, and the caches, through TelethonTransport."""

from __future__ import annotations

import datetime as dt

import pytest
from telethon import errors
from telethon.tl import functions, types

from conversations.models import ActivityEvent
from conversations.transport.base import AuthError, FloodWait, PermanentError, TransportError

from .conftest import run
from .doubles import DATE

ANN = 501


def sent():
    return types.UpdateShortSentMessage(id=1, pts=1, pts_count=1, date=DATE, out=True)


def test_flood_wait_pauses_the_account_and_no_call_is_made_before_then(transport, fake_client, clock):
    fake_client.answer(errors.FloodWaitError(request=None, capture=30))
    with pytest.raises(FloodWait) as exc:
        run(transport.send_text, ANN, "hi", random_id=1)
    assert exc.value.seconds == 30
    calls = len(fake_client.requests)
    event = ActivityEvent.objects.get(agent=transport.agent)
    assert event.data["flood_wait"] == 30 and "account paused" in event.summary

    clock.advance(20)
    with pytest.raises(FloodWait) as during:
        run(transport.react, -33, 5, "👍")  # another chat: the whole account is paused
    assert during.value.seconds == 10
    with pytest.raises(FloodWait):
        run(transport.send_text, ANN, "hi", random_id=1)
    assert len(fake_client.requests) == calls

    clock.advance(10)
    fake_client.answer(sent())
    assert run(transport.send_text, ANN, "hi", random_id=1).message_id == 1
    assert len(fake_client.requests) == calls + 1


def test_slow_mode_pauses_only_that_chat(transport, fake_client, clock):
    fake_client.answer(errors.SlowModeWaitError(request=None, capture=60))
    with pytest.raises(FloodWait) as exc:
        run(transport.send_text, -33, "hi", random_id=1)
    assert exc.value.seconds == 60
    with pytest.raises(FloodWait):
        run(transport.send_text, -33, "again", random_id=2)
    fake_client.answer(sent())
    run(transport.send_text, ANN, "elsewhere", random_id=3)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (errors.UserIsBlockedError, "USER_IS_BLOCKED"),
        (errors.ChatWriteForbiddenError, "CHAT_WRITE_FORBIDDEN"),
        (errors.PeerFloodError, "PEER_FLOOD"),
        (errors.UserPrivacyRestrictedError, "USER_PRIVACY_RESTRICTED"),
        (errors.InputUserDeactivatedError, "INPUT_USER_DEACTIVATED"),
        (errors.ChatAdminRequiredError, "CHAT_ADMIN_REQUIRED"),
        (errors.UserBannedInChannelError, "USER_BANNED_IN_CHANNEL"),
        (errors.ChannelPrivateError, "CHANNEL_PRIVATE"),
        (errors.YouBlockedUserError, "YOU_BLOCKED_USER"),
        (errors.ChatRestrictedError, "CHAT_RESTRICTED"),
        (errors.MessageTooLongError, "MESSAGE_TOO_LONG"),
    ],
)
def test_permanent_errors_fail_with_their_reason(transport, fake_client, error, reason):
    fake_client.answer(error(request=None))
    with pytest.raises(PermanentError) as exc:
        run(transport.send_text, ANN, "hi", random_id=1)
    assert exc.value.reason == reason


def test_unknown_bad_request_is_permanent_and_server_errors_are_transient(transport, fake_client):
    fake_client.answer(errors.BadRequestError(request=None, message="SOMETHING_NEW", code=400))
    with pytest.raises(PermanentError) as exc:
        run(transport.react, ANN, 1, "👍")
    assert exc.value.reason == "SOMETHING_NEW"
    fake_client.answer(errors.ServerError(request=None, message="INTERNAL", code=500))
    with pytest.raises(TransportError) as transient:
        run(transport.react, ANN, 1, "👍")
    assert not isinstance(transient.value, (PermanentError, AuthError, FloodWait))


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (errors.AuthKeyUnregisteredError, "AUTH_KEY_UNREGISTERED"),
        (errors.SessionRevokedError, "SESSION_REVOKED"),
        (errors.AuthKeyDuplicatedError, "AUTH_KEY_DUPLICATED"),
        (errors.UserDeactivatedError, "USER_DEACTIVATED"),
        (errors.UserDeactivatedBanError, "USER_DEACTIVATED_BAN"),
    ],
)
def test_auth_errors_stop_the_agent(transport, fake_client, error, reason):
    fake_client.answer(error(request=None))
    with pytest.raises(AuthError) as exc:
        run(transport.send_text, ANN, "hi", random_id=1)
    assert exc.value.reason == reason


def test_connection_errors_are_transient(transport, fake_client):
    fake_client.answer(ConnectionError("reset"), TimeoutError())
    for _ in range(2):
        with pytest.raises(TransportError) as exc:
            run(transport.set_typing, ANN)
        assert type(exc.value) is TransportError


def test_entities_are_cached_for_five_minutes_and_dropped_on_peer_id_invalid(transport, fake_client, clock):
    run(transport.set_typing, ANN)
    run(transport.set_typing, ANN)
    assert fake_client.resolved == [ANN]
    clock.advance(301)
    run(transport.set_typing, ANN)
    assert fake_client.resolved == [ANN, ANN]
    # A stale cached peer: resolved afresh and retried once.
    fake_client.answer(errors.PeerIdInvalidError(request=None))
    run(transport.set_typing, ANN)
    assert fake_client.resolved == [ANN, ANN, ANN]
    assert len(fake_client.of_type(functions.messages.SetTypingRequest)) == 5


def test_unknown_peer_is_permanent(transport, fake_client):
    with pytest.raises(PermanentError) as exc:
        run(transport.send_text, 404, "hi", random_id=1)
    assert exc.value.reason == "PEER_ID_INVALID"
    assert "404" in str(exc.value)


def notify(mute_until):
    return types.PeerNotifySettings(mute_until=mute_until)


def test_mute_status_is_cached_for_sixty_seconds(transport, fake_client, clock):
    fake_client.answer(notify(clock.now() + dt.timedelta(days=1)), notify(None))
    assert run(transport.is_muted, ANN) is True
    clock.advance(59)
    assert run(transport.is_muted, ANN) is True
    assert len(fake_client.requests) == 1
    clock.advance(1)
    assert run(transport.is_muted, ANN) is False
    assert len(fake_client.requests) == 2


def test_blocklist_is_cached_for_sixty_seconds_and_follows_block_and_unblock(transport, fake_client, clock):
    page = types.contacts.Blocked(
        blocked=[types.PeerBlocked(peer_id=types.PeerUser(ANN), date=DATE)], chats=[], users=[]
    )
    fake_client.answer(page)
    assert run(transport.is_blocked, ANN) is True
    assert run(transport.is_blocked, 502) is False
    run(transport.block, 502)
    assert run(transport.is_blocked, 502) is True
    run(transport.unblock, ANN)
    assert run(transport.is_blocked, ANN) is False
    assert len(fake_client.of_type(functions.contacts.GetBlockedRequest)) == 1
    clock.advance(60)
    fake_client.answer(types.contacts.Blocked(blocked=[], chats=[], users=[]))
    assert run(transport.is_blocked, 502) is False
    assert len(fake_client.of_type(functions.contacts.GetBlockedRequest)) == 2
