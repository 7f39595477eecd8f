"""Unused media files: listed by the console page and `manage.py mediafiles`, downloaded, deleted."""

from __future__ import annotations

import datetime as dt
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from cindy_site.testing.factories import AgentFactory
from conversations.models import Conversation, Message
from conversations.services.media_files import unused_media_files, unused_media_files_delete
from media_catalog.models import LibraryItem, MediaDescription

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def _file(root: Path, name: str, *, age_hours: float, data: bytes = PNG) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=age_hours)).timestamp()
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def media(settings, tmp_path, clock):
    """A media root with a file of each kind of use and three unused ones (one of them new).

    The clock is set to the real time: file ages come from the file system."""
    clock.set(dt.datetime.now(dt.UTC))
    settings.MEDIA_ROOT = tmp_path
    agent = AgentFactory(name="Wendy")
    conversation = Conversation.objects.create(agent=agent, peer_id=7, kind="dm", title="Bob")
    _file(tmp_path, "media_store/AgADused1.png", age_hours=48)
    Message.objects.create(
        conversation=conversation,
        message_id=1,
        sender_id=7,
        date=clock.now(),
        media=[
            {
                "kind": "media",
                "media_kind": "photo",
                "unique_id": "AgADused1",
                "file": "media_store/AgADused1.png",
            }
        ],
    )
    _file(tmp_path, "media_catalog/AgADcurated.png", age_hours=48)
    MediaDescription.objects.create(unique_id="AgADcurated", file="media_catalog/AgADcurated.png")
    _file(tmp_path, "media_library/goat.png", age_hours=48)
    LibraryItem.objects.create(agent=agent, unique_id="up1", file="media_library/goat.png")
    _file(tmp_path, "media_store/AgADorphan.png", age_hours=30)
    _file(tmp_path, "stickers/old_set/AgADgone.webp", age_hours=72, data=b"RIFF0000WEBPVP8 ")
    _file(tmp_path, "media_store/AgADfresh.png", age_hours=1)  # may still be on its way to its row
    _file(tmp_path, "profile_photos/1/me.jpg", age_hours=90)  # not a media folder: left alone
    return tmp_path


def test_only_files_no_row_names_and_older_than_the_grace_are_unused(media):
    names = [item.name for item in unused_media_files()]
    assert names == ["stickers/old_set/AgADgone.webp", "media_store/AgADorphan.png"]  # oldest first


def test_a_file_a_row_took_up_since_the_list_was_shown_is_kept(media):
    listed = [item.name for item in unused_media_files()]
    MediaDescription.objects.create(unique_id="AgADorphan", file="media_store/AgADorphan.png")

    deleted = unused_media_files_delete(names=listed)

    assert deleted == ["stickers/old_set/AgADgone.webp"]
    assert (media / "media_store/AgADorphan.png").exists()
    assert not (media / "stickers/old_set/AgADgone.webp").exists()


def test_the_command_lists_and_with_delete_removes_them(media):
    out = StringIO()
    call_command("mediafiles", stdout=out)
    assert "2 unused file(s)" in out.getvalue() and "media_store/AgADorphan.png" in out.getvalue()
    assert (media / "media_store/AgADorphan.png").exists()

    out = StringIO()
    call_command("mediafiles", "--delete", stdout=out)
    assert "Deleted 2 unused file(s)" in out.getvalue()
    assert sorted(p.relative_to(media).as_posix() for p in media.rglob("*") if p.is_file()) == [
        "media_catalog/AgADcurated.png",
        "media_library/goat.png",
        "media_store/AgADfresh.png",
        "media_store/AgADused1.png",
        "profile_photos/1/me.jpg",
    ]


def test_the_console_page_lists_downloads_and_deletes_the_ticked_files(verified_client, media):
    page = verified_client.get(reverse("admin:media_files_unused")).content.decode()
    assert "media_store/AgADorphan.png" in page and "AgADused1" not in page and "AgADfresh" not in page

    download = verified_client.get(reverse("admin:media_files_download") + "?name=media_store/AgADorphan.png")
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith('attachment; filename="AgADorphan.png"')
    assert b"".join(download.streaming_content) == PNG
    refused = verified_client.get(reverse("admin:media_files_download") + "?name=media_store/AgADused1.png")
    assert refused.status_code == 404

    response = verified_client.post(
        reverse("admin:media_files_unused"), {"name": ["media_store/AgADorphan.png"]}
    )
    assert response.status_code == 302
    assert not (media / "media_store/AgADorphan.png").exists()
    assert (media / "stickers/old_set/AgADgone.webp").exists()


def test_a_catalog_file_downloads_as_an_attachment(verified_client, media):
    row = MediaDescription.objects.get(unique_id="AgADcurated")
    url = reverse("admin:media_catalog_mediadescription_file", args=[row.pk])
    assert verified_client.get(url)["Content-Type"] == "image/png"  # inline preview as before
    download = verified_client.get(url + "?download=1")
    assert download["Content-Disposition"].startswith('attachment; filename="AgADcurated.png"')
    link = reverse("admin:media_files_description", args=[row.pk])
    change = verified_client.get(reverse("admin:media_catalog_mediadescription_change", args=[row.pk]))
    assert f'href="{link}"' in change.content.decode()
    assert b"".join(verified_client.get(link).streaming_content) == PNG


def test_a_described_download_without_a_catalog_copy_comes_from_the_message(verified_client, media):
    row = MediaDescription.objects.create(unique_id="AgADused1", kind="photo", description="AI text.")
    response = verified_client.get(reverse("admin:media_files_description", args=[row.pk]))
    assert response["Content-Disposition"].startswith('attachment; filename="AgADused1.png"')
    missing = MediaDescription.objects.create(unique_id="AgADnever", kind="photo")
    response = verified_client.get(reverse("admin:media_files_description", args=[missing.pk]))
    assert response.status_code == 404 and b"never downloaded" in response.content
