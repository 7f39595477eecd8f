"""`POST /agents/{id}/sandbox/files`: any media sent to a sandbox agent as a person, within the
caller's grants, its body refused by size before it is read."""

from __future__ import annotations

import typing

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http.multipartparser import MultiPartParser

from api.routes.sandbox import FileKind
from cindy_site.testing.audio import video_note
from cindy_site.testing.mtproto.media import image_bytes, tgs_bytes
from conversations.models import Message
from engine.tests.harness import Harness
from sandbox.models import SandboxChat, SandboxMessage
from sandbox.services.files import FILE_KINDS

pytestmark = pytest.mark.django_db

SANDBOX_OPERATOR = ("agents.view_agent", "sandbox.add_sandboxmessage", "sandbox.view_sandboxmessage")
PNG = image_bytes("hi", size=(32, 32), color="red", fmt="PNG")

# (file name, bytes, kind sent or None, media_kind, sticker_format, mime)
CASES = [
    ("cat.png", PNG, None, "photo", None, "image/png"),
    ("wave.webp", image_bytes("hi", size=(32, 32), color="green", fmt="WEBP"), None, "sticker", "static", "image/webp"),
    ("slide.tgs", tgs_bytes(), None, "sticker", "animated", "application/x-tgsticker"),
    ("clip.mp4", video_note(1.0), None, "video", None, "video/mp4"),
    ("notes.pdf", b"%PDF-1.4\n" + b"0" * 200, None, "document", None, "application/pdf"),
    ("cat.png", PNG, "animated-sticker", "sticker", "animated", "application/x-tgsticker"),
]  # fmt: skip


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def _upload(client, agent, name: str, data: bytes, **fields):
    return client.client.post(
        f"/api/v1/agents/{agent.pk}/sandbox/files",
        {"file": SimpleUploadedFile(name, data), **fields},
        headers=client._headers(),
    )


@pytest.mark.parametrize(
    ("name", "data", "kind", "media_kind", "sticker_format", "mime"),
    CASES,
    ids=[f"{c[0]}-as-{c[2]}" if c[2] else c[0] for c in CASES],
)
def test_each_kind_lands_in_the_sandbox_chat_and_reaches_the_agents_conversation(
    api, wendy, clock, media_root, name, data, kind, media_kind, sticker_format, mime
):
    harness = Harness(clock)
    harness.start()

    sent = _upload(api, wendy, name, data, as_name="Ada", caption="look", **({"kind": kind} if kind else {}))

    assert sent.status_code == 201, sent.content
    body = sent.json()
    [part] = body["media"]
    assert (part["media_kind"], part["sticker_format"], part["mime"], part["size"]) == (
        media_kind,
        sticker_format,
        mime,
        len(data),
    )
    assert (body["sender"], body["text"]) == ("Ada", "look")
    stored = SandboxMessage.objects.get(chat_id=body["chat_id"], message_id=body["message_id"])
    assert (media_root / stored.media[0]["file"]).read_bytes() == data

    harness.ingest()
    harness.step("media")
    mirrored = Message.objects.get(conversation__agent=wendy, message_id=body["message_id"])
    [item] = mirrored.media
    assert (item["media_kind"], item["mime"], item["unique_id"]) == (media_kind, mime, part["unique_id"])
    assert item.get("sticker_format") == sticker_format
    assert (media_root / item["file"]).read_bytes() == data
    assert mirrored.text == "look"


def test_the_schema_names_the_kinds_the_command_takes():
    assert typing.get_args(FileKind) == FILE_KINDS


def test_grants_bound_the_upload(api, api_as, make_staff, wendy, heidi, clock):
    wendy_op = api_as(make_staff("wendy-op", *SANDBOX_OPERATOR, agents=[wendy]))
    reader = api_as(make_staff("reader", "agents.view_agent", "sandbox.view_sandboxmessage", agents=[wendy]))
    heidis = api.post(f"/agents/{heidi.pk}/sandbox/messages", {"text": "for Heidi", "group": "Room"})
    assert heidis.status_code == 201

    beyond = _upload(wendy_op, heidi, "cat.png", PNG)
    assert beyond.status_code == 404
    assert f"agent {heidi.pk} does not exist or is not visible to you" in beyond.json()["detail"]
    unpermitted = _upload(reader, wendy, "cat.png", PNG)
    assert unpermitted.status_code == 403
    assert "lacks the permission sandbox.add_sandboxmessage" in unpermitted.json()["detail"]
    other_chat = _upload(wendy_op, wendy, "cat.png", PNG, chat_id=heidis.json()["chat_id"])
    assert other_chat.status_code == 422
    assert other_chat.json()["field"] == "chat_id"

    by_title = _upload(wendy_op, wendy, "cat.png", PNG, group="Room")

    assert by_title.status_code == 201, by_title.content
    assert by_title.json()["chat_id"] != heidis.json()["chat_id"]  # a group of its own, not Heidi's
    heidis_room = SandboxChat.objects.get(pk=heidis.json()["chat_id"])
    assert sorted(heidis_room.members.values_list("name", flat=True)) == ["Heidi", "You"]
    assert SandboxMessage.objects.filter(chat=heidis_room).count() == 1


def test_a_body_that_could_hold_a_file_past_the_limit_is_refused_before_it_is_read(
    api, wendy, clock, settings, monkeypatch
):
    settings.CINDY_SANDBOX_MAX_FILE_BYTES = 1000

    def refuse(self):
        raise AssertionError("the body was parsed before its size was checked")

    monkeypatch.setattr(MultiPartParser, "parse", refuse)

    sent = _upload(api, wendy, "big.bin", b"x" * 200_000)

    assert sent.status_code == 413
    detail = sent.json()["detail"]
    assert "at most 66,536 bytes are accepted here" in detail
    assert "a file of at most 1,000 bytes (CINDY_SANDBOX_MAX_FILE_BYTES)" in detail
    assert not SandboxMessage.objects.exists()


def test_a_file_past_the_limit_in_a_small_body_is_refused(api, wendy, clock, settings):
    settings.CINDY_SANDBOX_MAX_FILE_BYTES = 1000

    sent = _upload(api, wendy, "big.bin", b"x" * 1001)

    assert sent.status_code == 413
    assert sent.json() == {
        "detail": "file: 'big.bin' is 1,001 bytes; the sandbox takes at most 1,000 (CINDY_SANDBOX_MAX_FILE_BYTES)",
        "field": "file",
    }
    assert _upload(api, wendy, "ok.bin", b"x" * 1000).status_code == 201


def test_bad_fields_are_named(api, wendy, clock):
    unknown = _upload(api, wendy, "cat.png", PNG, kind="gif")
    assert unknown.status_code == 422
    assert unknown.json()["field"] == "kind"
    both = _upload(api, wendy, "cat.png", PNG, group="Room", chat_id=1)
    assert (both.status_code, both.json()["field"]) == (422, "chat_id")
    own_name = _upload(api, wendy, "cat.png", PNG, as_name="Wendy")
    assert (own_name.status_code, own_name.json()["field"]) == (422, "as_name")
    empty = _upload(api, wendy, "empty.png", b"")
    assert (empty.status_code, empty.json()["field"]) == (422, "file")
    assert not SandboxMessage.objects.exists()
