"""Account gateway requests end to end on the sandbox: the admin's service writes the request, the
gateway's request step runs it through SandboxTransport, and the sandbox's "Telegram" changes."""

from __future__ import annotations

import pytest

from agents.models import GatewayRequest
from agents.services import telegram_requests as services
from conversations.models import ActivityEvent, Conversation
from conversations.services.curation import conversations_set_muted
from engine.tests.harness import Harness
from sandbox.models import SandboxChat, SandboxMember, SandboxUser
from sandbox.services.chats import sandbox_group, sandbox_person, sandbox_say, sandbox_user_for_agent

pytestmark = pytest.mark.django_db
Status = GatewayRequest.Status


@pytest.fixture
def harness(agent, clock):
    harness = Harness(clock)
    harness.start()
    return harness


def done(request: GatewayRequest) -> GatewayRequest:
    request.refresh_from_db()
    assert request.status == Status.DONE, request.error
    return request


def test_an_admin_mute_sticks_through_the_dialog_refresh(agent, harness, clock, settings):
    settings.CINDY_UNREAD_SCAN_SECONDS = 0  # with scans on they read the lists, not the refresh
    sandbox_say(agent=agent, text="hi", as_name="Alice")
    harness.ingest()
    conversation = Conversation.objects.get(peer_id=sandbox_person(name="Alice").user_id)
    me = sandbox_user_for_agent(agent=agent)

    harness.refresh("dialogs")  # places the agent on its phase of the minute

    conversations_set_muted(conversations=[conversation], muted=True)
    clock.advance(harness.refresh_due("dialogs", agent.pk))
    assert harness.refresh("dialogs") is False  # a refresh before the gateway sent the mute keeps it
    conversation.refresh_from_db()
    assert conversation.muted
    harness.step("requests")
    assert SandboxMember.objects.get(user=me, chat__kind="dm").muted  # the sandbox's Telegram has it

    clock.advance(harness.refresh_due("dialogs", agent.pk))
    harness.refresh("dialogs")  # the next refresh reads the new state from "Telegram"
    conversation.refresh_from_db()
    assert conversation.muted

    conversations_set_muted(conversations=[conversation], muted=False)
    harness.step("requests")
    clock.advance(harness.refresh_due("dialogs", agent.pk))
    harness.refresh("dialogs")
    conversation.refresh_from_db()
    assert not conversation.muted
    assert not SandboxMember.objects.get(user=me, chat__kind="dm").muted
    summaries = list(
        ActivityEvent.objects.filter(conversation=conversation).values_list("summary", flat=True)
    )
    assert f"Unmute chat {conversation.peer_id}: done in Telegram" in summaries


def test_joining_a_public_group_and_leaving_it(agent, harness):
    group = sandbox_group(title="Chess club", members=[sandbox_person(name="Bob")])
    SandboxChat.objects.filter(pk=group.pk).update(username="chessclub", invite_hash="Inv1te0nly")
    request = done_after(harness, services.chat_request_join(agent=agent, target="https://t.me/chessclub"))
    me = sandbox_user_for_agent(agent=agent)
    assert SandboxMember.objects.filter(chat=group, user=me).exists()
    conversation = Conversation.objects.get(pk=request.result["conversation_id"])
    assert (conversation.title, conversation.peer_id) == ("Chess club", group.peer_id)

    done_after(harness, services.conversation_request_leave(agent=agent, peer_id=group.peer_id))
    assert not SandboxMember.objects.filter(chat=group, user=me).exists()
    done_after(harness, services.chat_request_join(agent=agent, target="t.me/+Inv1te0nly"))
    assert SandboxMember.objects.filter(chat=group, user=me).exists()


def test_a_join_that_fails_shows_the_reason(agent, harness):
    request = services.chat_request_join(agent=agent, target="@no_such_group")
    harness.step("requests")
    request.refresh_from_db()
    assert request.status == Status.FAILED
    assert request.error == (
        "Telegram refused: USERNAME_NOT_OCCUPIED (no sandbox group has the username @no_such_group)"
    )
    assert ActivityEvent.objects.filter(
        kind=ActivityEvent.Kind.AGENT_ERROR, summary__contains="no_such_group"
    ).exists()


def done_after(harness: Harness, request: GatewayRequest) -> GatewayRequest:
    harness.step("requests")
    return done(request)


def test_profile_and_contacts_round_trip(agent, harness, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    bob = sandbox_person(name="Bob")
    SandboxUser.objects.filter(pk=bob.pk).update(username="bobby_b")
    read = done_after(harness, services.account_request_read(agent=agent))
    assert read.result["profile"]["first_name"] == agent.name
    assert read.result["contacts"] == []

    changed = done_after(
        harness,
        services.account_request_update_profile(
            agent=agent, first_name="Wendy", last_name="W", about="Sandbox bio", username="wendy_w"
        ),
    )
    assert changed.result["profile"] | {"photos": []} == {
        "user_id": sandbox_user_for_agent(agent=agent).user_id,
        "first_name": "Wendy",
        "last_name": "W",
        "username": "wendy_w",
        "about": "Sandbox bio",
        "about_limit": 70,
        "photos": [],
    }
    added = done_after(
        harness,
        services.account_request_add_contact(agent=agent, target="@bobby_b", first_name="Bob", last_name=""),
    )
    assert [c["username"] for c in added.result["contacts"]] == ["bobby_b"]
    removed = done_after(
        harness, services.account_request_delete_contacts(agent=agent, user_ids=[bob.user_id])
    )
    assert removed.result["contacts"] == []


def test_profile_photos_are_added_shown_and_deleted(agent, harness, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    upload = tmp_path / "profile_uploads" / "w.png"
    upload.parent.mkdir()
    upload.write_bytes(b"\x89PNG\r\n\x1a\n")
    request = services.gateway_request_create(
        agent=agent, kind=GatewayRequest.Kind.ADD_PROFILE_PHOTO, params={"file": "profile_uploads/w.png"}
    )
    added = done_after(harness, request)
    (photo,) = added.result["profile"]["photos"]
    assert (tmp_path / photo["file"]).read_bytes() == upload.read_bytes()
    deleted = done_after(harness, services.account_request_delete_photo(agent=agent, photo_id=photo["id"]))
    assert deleted.result["profile"]["photos"] == []


def _library_png(agent, colour: str = "teal"):
    import io

    from django.core.files.uploadedfile import SimpleUploadedFile
    from PIL import Image

    from media_catalog.services.library import library_item_upload

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, "PNG")
    upload = SimpleUploadedFile("harbour.png", buffer.getvalue(), content_type="image/png")
    return library_item_upload(agent_id=agent.pk, upload=upload, description="The harbour wall")


def test_a_library_picture_becomes_a_profile_photo_through_the_same_request(
    agent, harness, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    item = _library_png(agent)

    request = services.account_request_add_library_photo(agent=agent, unique_id=item.unique_id)

    assert request.kind == GatewayRequest.Kind.ADD_PROFILE_PHOTO
    added = done_after(harness, request)
    (photo,) = added.result["profile"]["photos"]
    assert (tmp_path / photo["file"]).read_bytes() == (tmp_path / item.file.name).read_bytes()
    item.file.delete(save=False)  # the profile photo is a copy: the library may let go of its file
    assert (tmp_path / photo["file"]).is_file()
    outcome = ActivityEvent.objects.filter(agent=agent).latest("id").summary
    assert outcome == f"Add profile photo {item.unique_id} from the media library: done in Telegram"


def test_a_library_item_that_is_no_photo_is_refused_with_the_reason(agent, harness, settings, tmp_path):
    from media_catalog.models import LibraryItem

    settings.MEDIA_ROOT = tmp_path
    LibraryItem.objects.create(agent=agent, unique_id="song1", kind="audio", file="1/song1.ogg")

    for unique_id, reason in [
        ("song1", "is audio, not a photo"),
        ("gone1", "not in the agent's media library"),
    ]:
        request = services.account_request_add_library_photo(agent=agent, unique_id=unique_id)
        harness.step("requests")
        request.refresh_from_db()
        assert request.status == Status.FAILED
        assert reason in request.error, request.error
