"""The sandbox chat's Mark unread button: the agent's account marks the chat unread (a callout)."""

from __future__ import annotations

import pytest

from sandbox.models import SandboxMember, SandboxUpdate
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


def _mark(visitor, agent, **fields):
    data = {"agent": agent.pk, "as_name": "Alice", "group": "", **fields}
    return visitor.client.post("/dashboard/sandbox/mark-unread/", data)


def test_the_chat_page_offers_mark_unread_and_it_marks_the_agents_dm(verified, sandbox_agent):
    sandbox_say(agent=sandbox_agent, text="hello", as_name="Alice")
    page = verified.client.get("/dashboard/sandbox/", {"agent": sandbox_agent.pk, "as_name": "Alice"})
    assert b'id="mark-unread"' in page.content

    response = _mark(verified, sandbox_agent)

    assert response.status_code == 303
    assert response["Location"] == f"/dashboard/sandbox/?agent={sandbox_agent.pk}&as_name=Alice"
    member = SandboxMember.objects.get(user__agent=sandbox_agent)
    assert member.unread_mark
    assert SandboxUpdate.objects.filter(kind=SandboxUpdate.Kind.UNREAD_MARK, actor=member.user).count() == 1


def test_mark_unread_of_a_chat_never_started_names_the_fix(verified, sandbox_agent):
    response = _mark(verified, sandbox_agent, as_name="Nobody")
    assert response.status_code == 400
    assert "say something there first" in response.json()["errors"]["__all__"][0]
    assert not SandboxUpdate.objects.exists()


def test_mark_unread_needs_a_verified_login(unverified, sandbox_agent):
    sandbox_say(agent=sandbox_agent, text="hello", as_name="Alice")
    response = _mark(unverified, sandbox_agent)
    assert response.status_code == 403
    assert not SandboxMember.objects.filter(unread_mark=True).exists()
