"""Saving a photo seen in a chat to the agent's library, in Chromium: the conversation page's
"Save to library" form, its confirmation, and the item in the admin's library list with its
description. Screenshots go to artifacts/media-save-*.png."""

# The module shares test_browser.py's fixtures by importing them, which ruff reads as redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from cindy_site.clock import now
from cindy_site.testing.mtproto.media import image_bytes
from conversations.models import ActivityEvent, Conversation, Message
from dashboard.tests.test_browser import (  # noqa: F401 - fixtures shared with the dashboard walk
    ARTIFACTS,
    _agent,
    _log_in,
    _staff,
    llm,
    site,
    site_db,
)
from media_catalog.models import LibraryItem, MediaDescription

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser


@pytest.fixture
def page(chromium, site) -> Iterator[object]:
    context = chromium.new_context(base_url=site.url, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.site = site
    page.console_errors = []
    page.on(
        "console",
        lambda message: message.type == "error"
        and not (message.location or {}).get("url", "").endswith("/favicon.ico")
        and page.console_errors.append(message.text),
    )
    page.on("pageerror", lambda error: page.console_errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()


def _chat_with_a_photo(site, unique_id: str) -> Conversation:
    agent = _agent(f"Orla {secrets.token_hex(2)}", disabled=True)
    folder = Path(site.env["CINDY_MEDIA_ROOT"]) / "sandbox"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{unique_id}.jpg").write_bytes(image_bytes("kite", size=(80, 60), color="blue", fmt="JPEG"))
    chat = Conversation.objects.create(
        agent=agent, peer_id=6000 + secrets.randbelow(10**6), kind="dm", title="Alice", last_message_at=now()
    )
    part = {
        "kind": "media",
        "media_kind": "photo",
        "unique_id": unique_id,
        "mime": "image/jpeg",
        "file": f"sandbox/{unique_id}.jpg",
    }
    Message.objects.create(conversation=chat, message_id=1, sender_id=chat.peer_id, sender_name="Alice",
                           date=now(), text="my kite!", media=[part])  # fmt: skip
    MediaDescription.objects.create(unique_id=unique_id, kind="photo", description="a kite", status="ok")
    return chat


def test_an_operator_saves_a_chat_photo_and_finds_it_in_the_library(site_db, page):
    unique_id = f"kite{secrets.token_hex(4)}"
    chat = _chat_with_a_photo(site_db, unique_id)
    _log_in(page, _staff("curator"), next_url=f"/dashboard/conversations/{chat.pk}/")

    form = page.locator(f'details.media-save[data-unique-id="{unique_id}"]')
    expect(form.locator("summary")).to_have_text("Save to library")
    form.locator("summary").click()
    textarea = form.get_by_label("Description (curated: the agent reads it in its prompt)")
    expect(textarea).to_have_value("a kite")
    textarea.fill("a blue kite flying over the beach")
    form.get_by_role("button", name="Save to library").click()

    expect(page.locator(".notice")).to_contain_text(
        f"The photo {unique_id} is saved to the agent's library and curated in the catalog."
    )
    expect(form.locator("summary")).to_have_text("In the library · edit its description")
    expect(page.locator(".seen-media")).to_contain_text("a blue kite flying over the beach")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "media-save-conversation.png"), full_page=True)

    page.goto(f"/admin/media_catalog/libraryitem/?q={unique_id}")
    row = page.locator("#result_list tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(unique_id)
    expect(row).to_contain_text("a blue kite flying over the beach")
    expect(row.locator("img")).to_have_attribute("alt", unique_id)
    page.screenshot(path=str(ARTIFACTS / "media-save-library.png"), full_page=True)

    item = LibraryItem.objects.get(agent=chat.agent, unique_id=unique_id)
    assert item.file.name.endswith(f"{unique_id}.jpg")
    assert MediaDescription.objects.get(unique_id=unique_id).is_curated
    assert ActivityEvent.objects.filter(conversation_id=chat.pk, data__media_save="saved").count() == 1
    assert page.console_errors == []
