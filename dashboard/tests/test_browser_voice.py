"""The sandbox chat in Chromium: what an agent's voice note says shows under its player, as tall as
its text (the chat window's own `transcript` class once made it a 56vh scroll box)."""

from __future__ import annotations

import secrets

import pytest

from dashboard.tests import test_browser as base
from sandbox.models import SandboxMessage, SandboxUser
from sandbox.services.chats import sandbox_say

llm, site, site_db, page = base.llm, base.site, base.site_db, base.page  # the browser test's fixtures

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser
SAYS = "Good morning! The library opens at nine today."


def test_the_text_of_an_agents_voice_note_is_as_tall_as_its_words(site_db, page, settings):
    from cindy_site.testing.audio import voice_note
    from sandbox.services.voice import sandbox_voice_part

    agent = base._agent(f"Vera {secrets.token_hex(2)}")
    settings.MEDIA_ROOT = site_db.workdir / "media"  # the live site's store, where `sandbox voice` writes
    sent = sandbox_say(agent=agent, as_name="Alice", text="hello")
    part = sandbox_voice_part(voice_note(2.0), name="reply.ogg") | {"transcript": SAYS}
    SandboxMessage.objects.create(
        chat=sent.chat,
        message_id=sent.message_id + 1,
        sender=SandboxUser.objects.get(agent=agent),
        date=sent.date,
        media=[part],
    )
    base._log_in(page, base._staff("listener"), next_url="/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", "Alice")
    page.click("text=Open chat")

    said = page.locator("#transcript .bubble.agent .media.voice").get_by_text(SAYS)
    expect(said).to_have_count(1)
    box = said.evaluate(
        """node => {
            const range = document.createRange();
            range.selectNodeContents(node);
            const style = getComputedStyle(node);
            const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
            return {height: node.getBoundingClientRect().height, text: range.getBoundingClientRect().height,
                    padding: padding, scrolls: node.scrollHeight > node.clientHeight + 1};
        }"""
    )
    assert box["text"] > 0
    # One line of words: its line box (line-height) and padding, not a window-sized scroll box.
    assert box["height"] <= box["text"] * 1.5 + box["padding"], box
    assert not box["scrolls"], box
