"""The search of an agent's past in Chromium: from the dashboard's agents table to the agent's page,
a query typed into the labelled box, the hit and its conversation; then a conversation's own box."""

# The module shares test_browser.py's fixtures by importing them, which ruff reads as redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import re
import secrets

import pytest

from cindy_site.clock import now
from conversations.models import Conversation, Message
from dashboard.tests.test_browser import (  # noqa: F401 - fixtures shared with the dashboard walk
    _agent,
    _log_in,
    _staff,
    llm,
    page,
    site,
    site_db,
)

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser


def _chat(agent, peer_id: int, title: str, text: str) -> Conversation:
    chat = Conversation.objects.create(
        agent=agent, peer_id=peer_id, kind="dm", title=title, last_message_at=now()
    )
    Message.objects.create(conversation=chat, message_id=7, sender_id=peer_id, text=text, date=now())
    return chat


def test_an_operator_searches_an_agent_and_a_conversation(site_db, page):
    tag = secrets.token_hex(2)
    agent = _agent(f"Searcher {tag}")
    alice = _chat(agent, 7001, f"Alice {tag}", "we met at the lighthouse in Porto")
    _chat(agent, 7002, f"Bob {tag}", "the lighthouse keeper waved")
    device = _staff("operator")

    _log_in(page, device, next_url="/dashboard/")
    page.locator("#agents-table").get_by_role("link", name=agent.name).click()
    expect(page).to_have_url(re.compile(rf"/dashboard/agents/{agent.pk}/$"))
    page.get_by_label("Search every conversation").fill("Porto lighthouses")
    page.get_by_role("button", name="Search").click()

    hits = page.locator("#recall-hits tbody tr")
    expect(hits).to_have_count(2)
    expect(hits.first).to_contain_text("we met at the lighthouse in Porto")  # both words: first
    expect(hits.first).to_contain_text("#7")
    expect(page.get_by_label("Search every conversation")).to_have_value("Porto lighthouses")
    hits.first.get_by_role("link", name=f"Alice {tag}").click()
    expect(page).to_have_url(re.compile(rf"/dashboard/conversations/{alice.pk}/log/$"))

    # The conversation's own box finds its message and not Bob's.
    page.get_by_label("Search this conversation").fill("lighthouse")
    page.get_by_label("Search this conversation").press("Enter")
    expect(page).to_have_url(re.compile(rf"/dashboard/conversations/{alice.pk}/search/\?q=lighthouse$"))
    expect(page.locator("#recall-hits tbody tr")).to_have_count(1)
    expect(page.locator("#recall-hits")).to_contain_text("we met at the lighthouse in Porto")
    expect(page.locator("#recall-hits")).not_to_contain_text("keeper")

    # A query without words is explained in the page.
    page.get_by_label("Search this conversation").fill("?!")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("has no words to search for")
