"""Per-agent access in Chromium: a curator granted Lola sees Lola's conversations and events, and
nothing of Bernd's, in the admin, on the dashboard, in its JSON endpoints and on its WebSocket.

The REST API (/api/v1) uses the same `agents.access` functions; its own tests cover it.
"""

# The module shares test_browser.py's fixtures by importing them, which ruff reads as redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import re
import secrets

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import AgentGrant
from agents.roles import CURATOR
from cindy_site.clock import now
from conversations.models import Conversation, Message
from conversations.services.activity import record_event
from dashboard.tests.test_browser import (  # noqa: F401 - fixtures shared with the dashboard walk
    _agent,
    _log_in,
    _password_hash,
    llm,
    page,
    site,
    site_db,
)

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser


def _conversation(agent, title: str) -> Conversation:
    conversation = Conversation.objects.create(
        agent=agent, peer_id=9000 + agent.pk, kind="dm", title=title, last_message_at=now()
    )
    Message.objects.create(conversation=conversation, message_id=1, sender_id=9000, text="hello", date=now())
    return conversation


def _curator_of(agent) -> TOTPDevice:
    user = get_user_model().objects.create(
        username=f"curator-{secrets.token_hex(3)}", password=_password_hash(), is_staff=True
    )
    user.groups.add(Group.objects.get(name=CURATOR))
    AgentGrant.objects.create(user=user, agent=agent)
    return TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)


def test_a_curator_granted_one_agent_sees_nothing_of_another(site_db, page):
    tag = secrets.token_hex(2)
    lola, bernd = _agent(f"Lola {tag}"), _agent(f"Bernd {tag}")
    mine, theirs = (
        _conversation(lola, f"Chat with Lola's friend {tag}"),
        _conversation(bernd, f"Bernd's secret {tag}"),
    )
    device = _curator_of(lola)
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))

    # The dashboard: Lola's agent row and conversation, none of Bernd's; then the live socket.
    _log_in(page, device, next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#agents-table")).to_contain_text(lola.name)
    expect(page.locator("#conversations")).to_contain_text(mine.title)
    record_event("info", agent_id=bernd.pk, summary=f"bernd event {tag}")
    record_event("info", agent_id=lola.pk, summary=f"lola event {tag}")
    expect(page.locator("#activity")).to_contain_text(f"lola event {tag}", timeout=5000)
    body = page.locator("body").inner_text()
    assert bernd.name not in body and theirs.title not in body and f"bernd event {tag}" not in body
    assert frames and any(f"lola event {tag}" in frame for frame in frames)
    assert not [frame for frame in frames if bernd.name in frame or f"bernd event {tag}" in frame]

    # Bernd's conversation page and its JSON endpoint do not exist for her; Lola's do.
    assert page.goto(f"/dashboard/conversations/{theirs.pk}/").status == 404
    assert page.goto(f"/dashboard/conversations/{theirs.pk}/translations/?language=French").status == 404
    assert page.goto(f"/dashboard/conversations/{mine.pk}/").status == 200
    expect(page.locator("body")).to_contain_text(lola.name)

    # The admin: the conversations list, its agent filter, and a change page typed in by hand.
    page.goto("/admin/conversations/conversation/")
    expect(page.locator("#result_list")).to_contain_text(mine.title)
    expect(page.locator("#result_list")).not_to_contain_text(theirs.title)
    expect(page.locator("#changelist-filter")).not_to_contain_text(bernd.name)
    page.goto(f"/admin/conversations/conversation/{theirs.pk}/change/")
    expect(page).to_have_url(re.compile(r"/admin/$"))
    expect(page.locator(".messagelist")).to_contain_text("doesn’t exist")
    page.goto("/admin/conversations/message/")
    expect(page.locator("#result_list")).to_contain_text(mine.title)
    expect(page.locator("#result_list")).not_to_contain_text(theirs.title)
    expect(page.locator("#changelist-filter")).not_to_contain_text(bernd.name)
    page.goto("/admin/agents/agent/")
    expect(page.locator("#result_list")).to_contain_text(lola.name)
    expect(page.locator("#result_list")).not_to_contain_text(bernd.name)
