"""The sandbox chat's forms: what they accept, and the errors they give for what they refuse."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from media_catalog.models import MediaDescription, Sticker, StickerSet
from sandbox import forms
from sandbox.models import (
    SandboxChat,
    SandboxMember,
    SandboxMessage,
    SandboxTopic,
    SandboxUpdate,
    SandboxUser,
)
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _send(visitor, agent, **fields):
    data = {"agent": agent.pk if agent else 999, "as_name": "Alice", "group": "", **fields}
    return visitor.client.post("/dashboard/sandbox/send/", data)


def _open(visitor, agent, **fields):
    """Start the chat with the setup form's POST and follow the redirect to its URL."""
    data = {"agent": agent.pk, "as_name": "Alice", "group": "", **fields}
    return visitor.client.post("/dashboard/sandbox/", data, follow=True)


def _sandbox_rows() -> tuple[int, int, int]:
    return SandboxUser.objects.count(), SandboxChat.objects.count(), SandboxMember.objects.count()


def test_sandbox_page_lists_sandbox_agents_and_opens_a_dm(verified, sandbox_agent):
    response = _open(verified, sandbox_agent)
    assert response.redirect_chain == [(f"/dashboard/sandbox/?agent={sandbox_agent.pk}&as_name=Alice", 303)]
    assert response.status_code == 200
    config = response.context["config"]
    assert config["chat_kind"] == "dm"
    assert config["as_name"] == "Alice"
    assert config["agent_name"] == "Wendy"


def test_sandbox_page_opens_a_group_by_title(verified, sandbox_agent):
    response = _open(verified, sandbox_agent, group="Book club")
    assert response.context["chat"].title == "Book club"
    assert response.context["group_titles"] == ["Book club"]


def test_a_group_page_says_the_agent_answers_callouts_only_and_a_dm_does_not(verified, sandbox_agent):
    page = _open(verified, sandbox_agent, group="Book club").content.decode()
    assert (
        '<p class="muted" id="callouts">In a group Wendy answers callouts only: an @mention '
        "(<code>@wendy</code>), a reply to one of its messages, a reaction on its last message, or "
        '<strong>Mark unread</strong>. Any other message shows as "not addressed" in the activity.</p>'
    ) in page
    assert 'id="callouts"' not in _open(verified, sandbox_agent).content.decode()


def test_a_get_of_a_chat_never_started_changes_nothing_and_offers_to_start_it(verified, sandbox_agent):
    before = _sandbox_rows()
    response = verified.client.get(
        "/dashboard/sandbox/", {"agent": sandbox_agent.pk, "as_name": "Mallory", "group": "Secret club"}
    )
    assert response.status_code == 200 and response.context["chat"] is None
    assert "This chat has not been started yet" in response.content.decode()
    assert _sandbox_rows() == before
    assert not SandboxUser.objects.filter(name="Mallory").exists()


def test_a_get_of_a_started_chat_shows_it_and_changes_nothing(verified, sandbox_agent):
    _open(verified, sandbox_agent, group="Book club")
    before = _sandbox_rows()
    response = verified.client.get(
        "/dashboard/sandbox/", {"agent": sandbox_agent.pk, "as_name": "Alice", "group": "Book club"}
    )
    assert response.context["chat"].title == "Book club"
    assert _sandbox_rows() == before


def test_the_setup_form_posts_with_a_csrf_token(verified, sandbox_agent):
    page = verified.client.get("/dashboard/sandbox/").content.decode()
    assert 'method="post" action="/dashboard/sandbox/" id="chat-setup"' in page
    assert 'name="csrfmiddlewaretoken"' in page


def test_sandbox_page_names_an_unknown_agent(verified, sandbox_agent):
    for response in (
        verified.client.get("/dashboard/sandbox/", {"agent": 999, "as_name": "Alice"}),
        verified.client.post("/dashboard/sandbox/", {"agent": 999, "as_name": "Alice"}),
    ):
        assert response.status_code == 400
        assert "There is no sandbox agent with id 999: pick one from the list." in response.content.decode()
    assert _sandbox_rows() == (0, 0, 0)


def test_sandbox_page_refuses_an_empty_display_name(verified, sandbox_agent):
    response = verified.client.post("/dashboard/sandbox/", {"agent": sandbox_agent.pk, "as_name": "  "})
    assert response.status_code == 400
    assert "Your display name is empty" in response.content.decode()


def test_sandbox_page_needs_a_verified_staff_member(unverified, sandbox_agent):
    assert unverified.client.get("/dashboard/sandbox/").status_code == 302


def test_text_message_is_written_to_the_sandbox(verified, sandbox_agent):
    response = _send(verified, sandbox_agent, text="  hello Wendy  ")
    assert response.status_code == 200
    message = SandboxMessage.objects.get()
    assert (message.text, message.sender.name) == ("hello Wendy", "Alice")
    assert response.json()["message"]["text"] == "hello Wendy"


def test_group_mention_and_reply_are_kept(verified, sandbox_agent):
    first = sandbox_say(agent=sandbox_agent, text="first", as_name="Alice", group="Club")
    response = _send(
        verified, sandbox_agent, group="Club", text="@Wendy what do you think?", reply_to=first.message_id
    )
    assert response.status_code == 200
    message = SandboxMessage.objects.get(text__startswith="@Wendy")
    assert message.chat.title == "Club"
    assert message.reply_to_id == first.message_id


def test_empty_message_is_refused_with_a_clear_error(verified, sandbox_agent):
    response = _send(verified, sandbox_agent, text="   ")
    assert response.status_code == 400
    assert response.json()["errors"]["__all__"] == [
        "The message is empty: type some text, or pick a sticker or a photo."
    ]
    assert not SandboxMessage.objects.exists()


def test_unknown_agent_is_refused_with_a_clear_error(verified, sandbox_agent):
    response = _send(verified, None, text="hi")
    assert response.status_code == 400
    assert response.json()["errors"]["agent"] == [
        "There is no sandbox agent with id 999: pick one from the list."
    ]


def test_reply_to_a_missing_message_is_refused(verified, sandbox_agent):
    response = _send(verified, sandbox_agent, text="hi", reply_to=77)
    assert response.status_code == 400
    assert "message 77 does not exist" in response.json()["errors"]["__all__"][0]


def test_photo_is_stored_under_media_root_with_its_media_part(verified, sandbox_agent, media_root):
    photo = SimpleUploadedFile("cat.png", PNG, content_type="image/png")
    response = _send(verified, sandbox_agent, text="look", photo=photo)
    assert response.status_code == 200
    (part,) = SandboxMessage.objects.get().media
    assert part["media_kind"] == "photo"
    assert part["mime"] == "image/png"
    assert part["unique_id"].startswith("sbx")
    assert (media_root / part["file"]).read_bytes() == PNG
    url = response.json()["message"]["media"][0]["url"]
    assert url == f"/dashboard/sandbox/photos/{part['unique_id']}.png"
    served = verified.client.get(url)
    assert (served["Content-Type"], b"".join(served.streaming_content)) == ("image/png", PNG)


def test_sandbox_photos_are_for_verified_staff_only(verified, unverified, sandbox_agent):
    _send(verified, sandbox_agent, photo=SimpleUploadedFile("cat.png", PNG, content_type="image/png"))
    url = SandboxMessage.objects.get().media[0]["file"].replace("sandbox/", "/dashboard/sandbox/photos/")
    assert unverified.client.get(url).status_code == 302
    assert verified.client.get("/dashboard/sandbox/photos/..%2Fsecret.png").status_code == 404


def test_non_image_upload_is_refused(verified, sandbox_agent):
    upload = SimpleUploadedFile("notes.png", b"just some text, not a picture", content_type="image/png")
    response = _send(verified, sandbox_agent, photo=upload)
    assert response.status_code == 400
    assert response.json()["errors"]["photo"] == [
        '"notes.png" is not an image: upload a PNG, JPEG, GIF or WebP file.'
    ]


def test_too_large_photo_is_refused(verified, sandbox_agent, monkeypatch, media_root):
    monkeypatch.setattr(forms, "MAX_PHOTO_BYTES", 32)
    response = _send(
        verified, sandbox_agent, photo=SimpleUploadedFile("big.png", PNG, content_type="image/png")
    )
    assert response.status_code == 400
    assert "photos may be at most" in response.json()["errors"]["photo"][0]
    assert not media_root.exists() or not any(media_root.rglob("*.png"))


def _sticker_set(agent) -> Sticker:
    sticker_set = StickerSet.objects.create(short_name="WendyFaces", title="Wendy's faces")
    agent.sticker_set_names = ["WendyFaces"]
    agent.save()
    MediaDescription.objects.create(unique_id="AgADwink", description="a cheeky wink")
    return Sticker.objects.create(sticker_set=sticker_set, name="😉", unique_id="AgADwink")


def test_sticker_from_the_agents_sets_is_sent_as_a_sticker_part(verified, sandbox_agent):
    _sticker_set(sandbox_agent)
    page = _open(verified, sandbox_agent)
    assert "a cheeky wink" in page.content.decode()
    response = _send(verified, sandbox_agent, sticker="WendyFaces::😉")
    assert response.status_code == 200
    (part,) = SandboxMessage.objects.get().media
    assert (
        part
        | {
            "media_kind": "sticker",
            "sticker_set_name": "WendyFaces",
            "sticker_name": "😉",
            "unique_id": "AgADwink",
        }
        == part
    )


def test_sticker_outside_the_agents_sets_is_refused(verified, sandbox_agent):
    _sticker_set(sandbox_agent)
    response = _send(verified, sandbox_agent, sticker="OtherSet::😉")
    assert response.status_code == 400
    assert response.json()["errors"]["sticker"] == [
        'Sticker "OtherSet::😉" is not in Wendy\'s sticker sets: pick one from the list.'
    ]


def test_reaction_is_recorded_on_the_message(verified, sandbox_agent):
    message = sandbox_say(agent=sandbox_agent, text="hi", as_name="Alice")
    response = verified.client.post(
        "/dashboard/sandbox/react/",
        {
            "agent": sandbox_agent.pk,
            "as_name": "Alice",
            "group": "",
            "message_id": message.message_id,
            "emoji": "👍",
        },
    )
    assert response.status_code == 200
    message.refresh_from_db()
    assert [r["emoji"] for r in message.reactions] == ["👍"]


def test_reaction_to_a_missing_message_is_refused(verified, sandbox_agent):
    response = verified.client.post(
        "/dashboard/sandbox/react/",
        {"agent": sandbox_agent.pk, "as_name": "Alice", "group": "", "message_id": 5, "emoji": "👍"},
    )
    assert response.status_code == 400
    assert "message 5 does not exist" in response.json()["errors"]["__all__"][0]


def test_sending_needs_a_verified_staff_member(unverified, sandbox_agent):
    response = _send(unverified, sandbox_agent, text="hi")
    assert response.status_code == 403
    assert not SandboxMessage.objects.exists()


def test_sandbox_photos_are_served_as_their_sniffed_image_type_and_never_sniffable(
    verified, sandbox_agent, media_root
):
    _send(verified, sandbox_agent, photo=SimpleUploadedFile("cat.gif", PNG, content_type="image/gif"))
    url = SandboxMessage.objects.get().media[0]["file"].replace("sandbox/", "/dashboard/sandbox/photos/")
    served = verified.client.get(url)
    assert served["Content-Type"] == "image/png"
    assert served["X-Content-Type-Options"] == "nosniff"
    assert served["Content-Security-Policy"] == "default-src 'none'; sandbox"


def test_a_non_image_file_in_the_photo_folder_is_not_served(verified, media_root):
    folder = media_root / forms.PHOTO_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "page.png").write_bytes(b"<html><script>alert(1)</script></html>")
    assert verified.client.get("/dashboard/sandbox/photos/page.png").status_code == 404


def test_a_forum_topic_opens_as_its_own_chat_with_links_to_the_others(verified, sandbox_agent):
    response = _open(verified, sandbox_agent, group="Allotment", topic="Seeds")
    assert response.redirect_chain == [
        (f"/dashboard/sandbox/?agent={sandbox_agent.pk}&as_name=Alice&group=Allotment&topic=Seeds", 303)
    ]
    config = response.context["config"]
    seeds = SandboxTopic.objects.get(title="Seeds")
    assert (config["forum"], config["topic"], config["topic_id"]) == (True, "Seeds", seeds.topic_id)
    assert [(t["title"], t["current"]) for t in response.context["topics"]] == [("Seeds", True)]
    page = response.content.decode()
    assert "Allotment › Seeds" in page and 'id="topics"' in page

    sent = _send(verified, sandbox_agent, group="Allotment", topic="Seeds", text="beans?")
    assert sent.json()["message"]["topic_id"] == seeds.topic_id
    assert SandboxMessage.objects.get(text="beans?").topic_id == seeds.topic_id

    general = verified.client.get(
        "/dashboard/sandbox/", {"agent": sandbox_agent.pk, "as_name": "Alice", "group": "Allotment"}
    )
    assert (general.context["config"]["topic_id"], general.context["topic"]) == (None, None)
    assert "Allotment › General" in general.content.decode()


def test_a_topic_without_a_group_is_refused_naming_the_fix(verified, sandbox_agent):
    response = _open(verified, sandbox_agent, topic="Seeds")
    assert response.status_code == 400
    assert "Topic 'Seeds' needs a group" in response.context["form"].errors["topic"][0]
    assert not SandboxTopic.objects.exists()


def _typing(visitor, agent, **fields):
    data = {"agent": agent.pk, "as_name": "Alice", "group": "", **fields}
    return visitor.client.post("/dashboard/sandbox/typing/", data)


def test_typing_in_the_page_sends_a_typing_update_to_the_agent(verified, sandbox_agent, clock):
    response = _typing(verified, sandbox_agent, typing="on")
    assert response.json() == {"ok": True}
    alice = SandboxUser.objects.get(name="Alice")
    member = SandboxMember.objects.get(user=alice)
    assert member.typing_until is not None and member.typing_until > clock.now()
    assert SandboxUpdate.objects.filter(kind=SandboxUpdate.Kind.TYPING, actor=alice).count() == 1

    _typing(verified, sandbox_agent)  # the box was emptied: typing stops
    member.refresh_from_db()
    assert member.typing_until is None


def test_typing_in_a_group_is_refused_with_a_clear_error(verified, sandbox_agent):
    response = _typing(verified, sandbox_agent, typing="on", group="Book club")
    assert response.status_code == 400
    assert "direct messages only" in response.json()["errors"]["group"][0]
    assert not SandboxUpdate.objects.exists()


def test_typing_needs_a_verified_staff_member(unverified, sandbox_agent):
    response = _typing(unverified, sandbox_agent, typing="on")
    assert response.status_code == 403
    assert not SandboxUpdate.objects.exists()
