"""The sandbox chat in Chromium shows "typing…" both ways: the agent's typing to the person, and the
person's typing (in the page's message box) to the agent, as `manage.py sandbox typing` signals it."""

from __future__ import annotations

import secrets

import pytest

from conversations.models import Conversation
from dashboard.tests import test_browser as base
from sandbox.models import SandboxMember

llm, site, site_db, page = base.llm, base.site, base.site_db, base.page  # the browser test's fixtures

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser

#: How long the test waits for the gateway process to take up the typing update.
SEEN_WITHIN_MS = 20_000


def _until(page, check, what: str) -> None:
    """Wait (polling, as `expect` does) until `check()` holds; fail naming `what` otherwise."""
    for _ in range(SEEN_WITHIN_MS // 100):
        if check():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"{what} did not happen within {SEEN_WITHIN_MS / 1000:g} s")


def test_typing_is_shown_both_ways_in_the_sandbox_chat(site_db, page, llm):
    agent = base._agent(f"Tilly {secrets.token_hex(2)}")
    base._log_in(page, base._staff("typist"), next_url="/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", "Bea")
    page.click("text=Open chat")
    expect(page.locator("#live-status")).to_have_text("live")
    page.evaluate(
        """window.typingSeen = [];
        new MutationObserver(() => window.typingSeen.push(document.getElementById("typing").textContent))
            .observe(document.getElementById("typing"), {childList: true, characterData: true, subtree: true});"""
    )

    # The agent's typing is shown to the person while it types its answer.
    llm.reply_with(base.tasks({"kind": "send", "text": "Hello Bea, what can I do for you?"}))
    site_db.start_gateway()
    page.fill("#message-text", "Hi there")
    page.click("#send")
    expect(page.locator("#transcript .bubble.agent")).to_contain_text(
        "Hello Bea, what can I do for you?", timeout=60_000
    )
    assert f"{agent.name} is typing…" in page.evaluate("window.typingSeen")

    # The person's typing in the message box reaches the agent: the sandbox records the update and
    # the gateway notes the partner typing in the conversation (the reply would wait for it).
    conversation = Conversation.objects.get(agent=agent)
    with page.expect_response("**/dashboard/sandbox/typing/") as answer:
        page.locator("#message-text").press_sequentially("Do you")
    assert answer.value.json() == {"ok": True}
    member = SandboxMember.objects.filter(chat__members__agent=agent, user__name="Bea")
    assert member.get().typing_until is not None
    _until(
        page,
        lambda: Conversation.objects.filter(pk=conversation.pk, partner_typing_until__isnull=False).exists(),
        "the agent noting that Bea types",
    )
    assert page.locator("#typing").text_content() == ""  # one's own typing is not shown to oneself

    # Emptying the box stops the typing, for the agent too.
    with page.expect_response("**/dashboard/sandbox/typing/"):
        page.fill("#message-text", "")
    assert member.get().typing_until is None
    _until(
        page,
        lambda: Conversation.objects.filter(pk=conversation.pk, partner_typing_until__isnull=True).exists(),
        "the agent noting that Bea stopped typing",
    )
