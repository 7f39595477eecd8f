"""Describing media again on an operator's request: AI rows only, cost recorded, curated text kept."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from conversations.models import ActivityEvent
from llm.media_refresh import media_descriptions_refresh, media_descriptions_refresh_task
from llm.models import LLMCall
from llm.tests.conftest import add_message
from media_catalog.models import MediaDescription

pytestmark = pytest.mark.django_db

JPEG = b"\xff\xd8\xff fake jpeg"


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


def _downloaded(dm, media_root, unique_id: str, message_id: int = 1):
    (media_root / "chat" / f"{unique_id}.jpg").write_bytes(JPEG)
    part = {
        "kind": "media",
        "media_kind": "photo",
        "unique_id": unique_id,
        "mime": "image/jpeg",
        "file": f"chat/{unique_id}.jpg",
    }
    return add_message(dm, message_id, media=[part])


def test_an_ai_description_is_made_again_from_the_downloaded_file(dm, fake_llm, media_root):
    _downloaded(dm, media_root, "P1")
    row = MediaDescription.objects.create(
        unique_id="P1", kind="photo", description="A blurry thing.", status="ok", source="ai", attempts=1
    )
    fake_llm.reply_with("A loaf of rye bread on a wooden board.")

    outcome = media_descriptions_refresh(ids=[row.pk])

    row.refresh_from_db()
    assert outcome.described == ["P1"]
    assert (row.description, row.status, row.source, row.attempts) == (
        "A loaf of rye bread on a wooden board.",
        "ok",
        "ai",
        2,
    )
    assert "inlineData" in fake_llm.requests[0].json["contents"][0]["parts"][1]
    assert LLMCall.objects.get().purpose == "describe"


def test_curated_rows_and_rows_without_a_file_cost_nothing(dm, fake_llm, media_root):
    curated = MediaDescription.objects.create(
        unique_id="C1", kind="photo", description="Our goat Nell.", status="curated", source="curated"
    )
    lost = MediaDescription.objects.create(unique_id="L1", kind="photo", description=None, status="error")

    summary = media_descriptions_refresh_task([curated.pk, lost.pk])

    assert fake_llm.requests == []
    assert summary == (
        "Media descriptions refreshed: 0 described; 1 curated, left as they are; 1 without a stored file (L1)"
    )
    assert ActivityEvent.objects.get(summary=summary).kind == "info"
    curated.refresh_from_db()
    assert curated.description == "Our goat Nell."


def test_a_failed_call_is_recorded_and_named(dm, fake_llm, media_root):
    _downloaded(dm, media_root, "P2")
    row = MediaDescription.objects.create(unique_id="P2", kind="photo", description="Old.", status="ok")
    fake_llm.reply_with("x", blocked=True)

    outcome = media_descriptions_refresh(ids=[row.pk])

    row.refresh_from_db()
    assert outcome.failed == ["P2"] and (row.status, row.description) == ("not_understood", None)


def test_the_console_action_queues_only_the_ai_rows(verified_client, django_capture_on_commit_callbacks):
    ai = MediaDescription.objects.create(unique_id="A1", kind="photo", description="AI text.")
    curated = MediaDescription.objects.create(
        unique_id="C2", kind="photo", description="Mine.", source="curated"
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = verified_client.post(
            reverse("admin:media_catalog_mediadescription_changelist"),
            {"action": "describe_again", "_selected_action": [ai.pk, curated.pk]},
            follow=True,
        )

    queued = [SignedPackage.loads(row.payload) for row in OrmQ.objects.order_by("pk")]  # the ORM broker
    assert [(t["func"], t["args"]) for t in queued] == [
        ("llm.media_refresh.media_descriptions_refresh_task", ([ai.pk],))
    ]
    assert "1 item(s) will be described again" in response.content.decode()
    assert "1 curated description(s) are left as they are" in response.content.decode()
