"""The browser sandbox in Chromium with a forum group: each topic is its own chat page, General too."""

from __future__ import annotations

import secrets

import pytest

from dashboard.tests.test_browser import (  # noqa: F401
    _agent,
    _log_in,
    _staff,
    expect,
    llm,
    page,
    site,
    site_db,
)
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.browser


def test_a_forum_topic_opens_as_its_own_chat_and_links_to_the_others(site_db, page):  # noqa: F811
    agent = _agent(f"Fern {secrets.token_hex(2)}")
    group = f"Allotment {secrets.token_hex(2)}"
    sandbox_say(agent=agent, text="beans or peas?", as_name="Alice", group=group, topic="Seeds")
    sandbox_say(agent=agent, text="who has the spade?", as_name="Alice", group=group, topic="Tools")
    sandbox_say(agent=agent, text="morning all", as_name="Alice", group=group)
    device = _staff("gardener")
    _log_in(page, device, next_url="/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", "Alice")
    page.fill("#id_group", group)
    page.fill("#id_topic", "Seeds")
    page.click("text=Open chat")
    expect(page.locator("#live-status")).to_have_text("live")

    transcript = page.locator("#transcript")
    expect(page.locator("#chat-title")).to_have_text(f"{group} › Seeds")
    expect(transcript.locator(".bubble")).to_have_count(1)
    expect(transcript).to_contain_text("beans or peas?")

    page.fill("#message-text", "and carrots?")
    page.click("#send")
    expect(transcript.locator(".bubble")).to_have_count(2)

    page.locator("#topics a", has_text="Tools").click()
    expect(page.locator("#chat-title")).to_have_text(f"{group} › Tools")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(transcript.locator(".bubble")).to_have_count(1)
    expect(transcript).to_contain_text("who has the spade?")

    page.locator("#topics a", has_text="General").click()
    expect(page.locator("#chat-title")).to_have_text(f"{group} › General")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(transcript.locator(".bubble")).to_have_count(1)
    expect(transcript).to_contain_text("morning all")
