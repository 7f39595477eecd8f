"""The conversation page's "Save to library" form: shown beside each savable media item to staff who
may add library items, a CSRF-protected POST that needs `media_catalog.add_libraryitem`, a clear 400
for what cannot be saved, and the page's notice of what happened."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django_otp import DEVICE_ID_SESSION_KEY

from cindy_site.clock import now
from conversations.models import Conversation, Message
from media_catalog.models import LibraryItem, MediaDescription

pytestmark = pytest.mark.django_db

JPEG = b"\xff\xd8\xff\xe0 a small photo \xff\xd9"


@pytest.fixture
def chat(sandbox_agent, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "p1.jpg").write_bytes(JPEG)
    chat = Conversation.objects.create(agent=sandbox_agent, peer_id=1001, kind="dm", title="Alice")
    Message.objects.create(
        conversation=chat,
        message_id=3,
        sender_id=1001,
        sender_name="Alice",
        date=now(),
        media=[
            {
                "kind": "media",
                "media_kind": "photo",
                "unique_id": "P1",
                "mime": "image/jpeg",
                "file": "sandbox/p1.jpg",
            },
            {"kind": "media", "media_kind": "voice", "unique_id": "V1", "mime": "audio/ogg"},
        ],
    )
    MediaDescription.objects.create(unique_id="P1", kind="photo", description="a red kite", status="ok")
    return chat


@pytest.fixture
def saver(staff):
    staff.user_permissions.add(Permission.objects.get(codename="add_libraryitem"))
    return staff


def _url(chat, unique_id: str = "P1", message_id: int = 3) -> str:
    return f"/dashboard/conversations/{chat.pk}/media/{message_id}/{unique_id}/save/"


def test_the_page_offers_the_form_for_the_photo_only_and_saving_says_what_happened(verified, saver, chat):
    page = verified.client.get(f"/dashboard/conversations/{chat.pk}/").content.decode()
    assert page.count('class="media-save"') == 1 and 'data-unique-id="P1"' in page
    assert _url(chat) in page and ">a red kite</textarea>" in page

    response = verified.client.post(
        _url(chat), {"description": "a red kite", "next": f"/dashboard/conversations/{chat.pk}/"}, follow=True
    )
    assert response.redirect_chain[-1] == (f"/dashboard/conversations/{chat.pk}/", 302)
    notice = response.content.decode()
    assert "The photo P1 is saved to the agent&#x27;s library and curated in the catalog." in notice
    assert "In the library · edit its description" in notice
    item = LibraryItem.objects.get(unique_id="P1")
    assert Path(item.file.path).read_bytes() == JPEG and item.description == "a red kite"

    again = verified.client.post(_url(chat), {"description": "a red kite"}, follow=True).content.decode()
    assert "is already in the agent&#x27;s library" in again
    assert LibraryItem.objects.count() == 1


def test_without_the_permission_there_is_no_form_and_a_post_is_refused(verified, chat):
    page = verified.client.get(f"/dashboard/conversations/{chat.pk}/").content.decode()
    assert 'class="media-save"' not in page
    assert verified.client.post(_url(chat), {"description": "x"}).status_code == 403
    assert not LibraryItem.objects.exists() and not MediaDescription.objects.get().is_curated


def test_a_post_without_the_csrf_token_is_refused(saver, staff_device, chat):
    client = Client(enforce_csrf_checks=True)
    client.force_login(saver)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = staff_device.persistent_id
    session.save()
    assert client.post(_url(chat), {"description": "a red kite"}).status_code == 403
    assert not LibraryItem.objects.exists()


@pytest.mark.parametrize(
    ("url_args", "data", "expected"),
    [
        (("V1",), {"description": "hello"}, "Not saved: a voice note cannot be saved to the library"),
        (("P1", 9), {"description": "x"}, "Not saved: message #9 is not in this conversation"),
        (("P1",), {"description": ""}, "Not saved: description: write what the media shows"),
    ],
)
def test_what_cannot_be_saved_is_a_clear_400(verified, saver, chat, url_args, data, expected):
    response = verified.client.post(_url(chat, *url_args), data)
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")
    assert response.content.decode().startswith(expected)
    assert not LibraryItem.objects.exists() and not MediaDescription.objects.get().is_curated


def test_the_task_log_offers_the_same_form_and_returns_to_the_log(verified, saver, chat):
    log_url = f"/dashboard/conversations/{chat.pk}/log/"
    page = verified.client.get(log_url).content.decode()
    assert page.count('class="media-save"') == 1 and f'name="next" value="{log_url}"' in page
    response = verified.client.post(_url(chat), {"description": "a red kite", "next": log_url})
    assert (response.status_code, response["Location"]) == (302, log_url)
    assert LibraryItem.objects.filter(unique_id="P1").exists()
