from __future__ import annotations

import pytest

from conversations.models import Message
from llm.media import warm_media_descriptions
from llm.models import LLMCall
from llm.tests.conftest import add_message
from media_catalog.models import MediaDescription


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


def _photo(dm, message_id, unique_id, *, media_root, mime="image/jpeg", downloaded=True) -> Message:
    part = {"kind": "media", "media_kind": "photo", "unique_id": unique_id, "mime": mime}
    if downloaded:
        (media_root / "chat" / f"{unique_id}.bin").write_bytes(b"\xff\xd8\xff fake jpeg")
        part["file"] = f"chat/{unique_id}.bin"
    return add_message(dm, message_id, media=[part])


def test_downloaded_media_gets_an_ai_description(dm, fake_llm, media_root):
    fake_llm.reply_with("A loaf of rye bread on a wooden board.")
    message = _photo(dm, 1, "P1", media_root=media_root)

    spent = warm_media_descriptions([message], agent_id=dm.agent_id, conversation_id=dm.pk)

    assert spent == 1
    row = MediaDescription.objects.get(unique_id="P1")
    assert (row.source, row.status, row.description) == ("ai", "ok", "A loaf of rye bread on a wooden board.")
    body = fake_llm.requests[0].json
    assert fake_llm.requests[0].path.endswith("/models/gemini-2.5-flash:generateContent")
    assert "inlineData" in body["contents"][0]["parts"][1]
    assert LLMCall.objects.get().purpose == "describe"


def test_cache_hits_and_curated_rows_cost_nothing(dm, fake_llm, media_root):
    MediaDescription.objects.create(
        unique_id="P1", source="curated", status="curated", description="curated!"
    )
    MediaDescription.objects.create(unique_id="P2", source="ai", status="ok", description="seen before")
    messages = [_photo(dm, 1, "P1", media_root=media_root), _photo(dm, 2, "P2", media_root=media_root)]

    assert warm_media_descriptions(messages) == 0

    assert fake_llm.requests == []
    assert MediaDescription.objects.get(unique_id="P1").description == "curated!"


def test_media_that_was_not_downloaded_is_skipped(dm, fake_llm, media_root):
    message = _photo(dm, 1, "P1", media_root=media_root, downloaded=False)

    assert warm_media_descriptions([message]) == 0
    assert fake_llm.requests == [] and not MediaDescription.objects.exists()


def test_budget_limits_attempts_newest_first(dm, fake_llm, media_root):
    messages = [_photo(dm, i, f"P{i}", media_root=media_root) for i in (1, 2, 3)]

    assert warm_media_descriptions(messages, budget=2) == 2

    assert set(MediaDescription.objects.values_list("unique_id", flat=True)) == {"P2", "P3"}


def test_unsupported_formats_are_recorded_without_a_call(dm, fake_llm, media_root):
    message = _photo(dm, 1, "T1", media_root=media_root, mime="application/x-msdownload")

    warm_media_descriptions([message])

    assert MediaDescription.objects.get(unique_id="T1").status == "unsupported"
    assert fake_llm.requests == []


def test_blocked_reply_is_not_understood_and_failures_are_errors(dm, fake_llm, media_root, settings):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.reply_with("x", blocked=True)
    first = _photo(dm, 2, "P2", media_root=media_root)
    warm_media_descriptions([first], sleep=lambda s: None)
    assert MediaDescription.objects.get(unique_id="P2").status == "not_understood"

    fake_llm.fail_next(500, times=2)
    second = _photo(dm, 3, "P3", media_root=media_root)
    warm_media_descriptions([second], sleep=lambda s: None)
    row = MediaDescription.objects.get(unique_id="P3")
    assert (row.status, row.attempts) == ("error", 1)
