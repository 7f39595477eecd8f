# ruff: noqa: F811  (the Telethon fixtures are imported by name and used as arguments)
"""Account gateway requests (mute, join/leave, profile, contacts) run through engine/requests.py on
TelethonTransport, with Telegram's side answering real TL objects (the sandbox: the next file)."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from agents.models import GatewayRequest
from agents.services import telegram_requests as services
from conversations.models import ActivityEvent, Conversation
from engine.requests import execute_request, request_finish
from telegram.tests.account_server import fake_client, server  # noqa: F401
from telegram.tests.conftest import (  # noqa: F401
    logged_in,
    telegram_settings,
    tg_agent,
    transport,
)

Status = GatewayRequest.Status


def run_request(request: GatewayRequest, transport) -> GatewayRequest:
    """What the gateway's requests step does with one claimed request."""
    result, error = async_to_sync(execute_request)(request, transport)
    request_finish(request_id=request.pk, result=result, error=error)
    request.refresh_from_db()
    return request


def test_an_admin_mute_reaches_telegram_and_the_mirror(transport, logged_in, server):
    conversation = Conversation.objects.create(agent=logged_in, peer_id=501, kind="dm", title="Ann")
    request = run_request(
        services.conversation_request_mute(agent=logged_in, peer_id=501, muted=True), transport
    )
    assert request.status == Status.DONE, request.error
    assert server.mute_until[501] > 0
    conversation.refresh_from_db()
    assert conversation.muted
    event = ActivityEvent.objects.get(conversation=conversation, kind=ActivityEvent.Kind.INFO)
    assert event.summary == "Mute chat 501: done in Telegram"


def test_joining_records_the_conversation_and_leaving_reaches_telegram(transport, logged_in, server):
    joined = run_request(services.chat_request_join(agent=logged_in, target="@cindyfans"), transport)
    assert joined.status == Status.DONE, joined.error
    conversation = Conversation.objects.get(pk=joined.result["conversation_id"])
    assert (conversation.title, conversation.kind) == ("Cindy fans", "group")
    left = run_request(
        services.conversation_request_leave(agent=logged_in, peer_id=conversation.peer_id), transport
    )
    assert left.status == Status.DONE, left.error
    assert server.left == [1500]
    summaries = list(
        ActivityEvent.objects.filter(conversation=conversation).values_list("summary", flat=True)
    )
    assert "Join @cindyfans: done in Telegram" in summaries
    assert f"Leave chat {conversation.peer_id}: done in Telegram" in summaries


def test_a_failed_join_tells_the_operator_why(transport, logged_in):
    request = run_request(
        services.chat_request_join(agent=logged_in, target="https://t.me/+ZZZZZZZZ99"), transport
    )
    assert request.status == Status.FAILED
    assert request.error == "Telegram refused: INVITE_HASH_INVALID"
    event = ActivityEvent.objects.get(kind=ActivityEvent.Kind.AGENT_ERROR)
    assert (
        event.summary
        == "Join https://t.me/+ZZZZZZZZ99: request failed: Telegram refused: INVITE_HASH_INVALID"
    )


def test_the_profile_is_read_and_changed_through_requests(transport, logged_in, server, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    read = run_request(services.account_request_read(agent=logged_in), transport)
    assert read.status == Status.DONE, read.error
    profile = read.result["profile"]
    assert (profile["first_name"], profile["about"], profile["username"]) == (
        "Heidi",
        "Hi there",
        "Heidi_Bot",
    )
    assert profile["photos"][0]["file"] == f"profile_photos/{logged_in.pk}/9001.jpg"
    assert (tmp_path / profile["photos"][0]["file"]).is_file()
    assert read.result["contacts"][0]["username"] == "ann"

    changed = run_request(
        services.account_request_update_profile(
            agent=logged_in, first_name="Heidi", last_name="K", about="Plays chess", username="heidi_chess"
        ),
        transport,
    )
    assert changed.status == Status.DONE, changed.error
    assert changed.result["profile"]["about"] == "Plays chess"  # the page shows Telegram's state after it
    logged_in.refresh_from_db()
    assert logged_in.telegram_username == "heidi_chess"


def test_a_taken_username_fails_with_the_reason(transport, logged_in):
    request = run_request(
        services.account_request_update_profile(
            agent=logged_in, first_name="Heidi", last_name="", about="", username="taken_name"
        ),
        transport,
    )
    assert request.status == Status.FAILED
    assert request.error == "Telegram refused: USERNAME_OCCUPIED (@taken_name is taken by another account)"


def test_contacts_are_added_and_deleted_through_requests(transport, logged_in, server, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    added = run_request(
        services.account_request_add_contact(
            agent=logged_in, target="@bobby", first_name="Bob", last_name=""
        ),
        transport,
    )
    assert added.status == Status.DONE, added.error
    assert [c["user_id"] for c in added.result["contacts"]] == [501, 502]
    deleted = run_request(
        services.account_request_delete_contacts(agent=logged_in, user_ids=[501]), transport
    )
    assert [c["user_id"] for c in deleted.result["contacts"]] == [502]


def test_profile_photos_are_added_and_deleted_through_requests(
    transport, logged_in, server, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    upload = tmp_path / "profile_uploads" / "x.jpg"
    upload.parent.mkdir()
    upload.write_bytes(b"\xff\xd8\xff")
    request = services.gateway_request_create(
        agent=logged_in, kind=GatewayRequest.Kind.ADD_PROFILE_PHOTO, params={"file": "profile_uploads/x.jpg"}
    )
    added = run_request(request, transport)
    assert added.status == Status.DONE, added.error
    assert len(added.result["profile"]["photos"]) == 2
    deleted = run_request(services.account_request_delete_photo(agent=logged_in, photo_id=9001), transport)
    assert [p["id"] for p in deleted.result["profile"]["photos"]] == [9003]
