"""/api/v1/agents/{id}/conversations and their messages: read-only, paged, per agent."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Conversation, Message

pytestmark = pytest.mark.django_db


def _chat(agent, peer_id: int, messages: int = 0) -> Conversation:
    chat = Conversation.objects.create(agent=agent, peer_id=peer_id, kind="dm", title=f"Peer {peer_id}")
    start = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)
    for n in range(1, messages + 1):
        Message.objects.create(
            conversation=chat,
            message_id=n,
            sender_id=peer_id if n % 2 else None,
            sender_name="Ann" if n % 2 else "Wendy",
            is_agent=not n % 2,
            date=start + dt.timedelta(minutes=n),
            text=f"message {n}",
        )
    return chat


def test_listing_and_reading_conversations(api, wendy, heidi):
    mine, _ = _chat(wendy, 1001), _chat(heidi, 2002)

    listed = api.get(f"/agents/{wendy.pk}/conversations").json()
    assert [(c["id"], c["peer_id"]) for c in listed["items"]] == [(mine.pk, 1001)]
    assert api.get(f"/agents/{wendy.pk}/conversations/{mine.pk}").json()["title"] == "Peer 1001"


def test_messages_page_oldest_first(api, wendy):
    chat = _chat(wendy, 1001, messages=5)

    first = api.get(f"/agents/{wendy.pk}/conversations/{chat.pk}/messages", limit=2).json()
    assert [m["text"] for m in first["items"]] == ["message 1", "message 2"]
    assert [m["is_agent"] for m in first["items"]] == [False, True]
    assert first["count"] == 5
    last = api.get(f"/agents/{wendy.pk}/conversations/{chat.pk}/messages", limit=2, offset=4).json()
    assert ([m["message_id"] for m in last["items"]], last["next"]) == ([5], None)


def test_another_agent_s_conversation_is_404(api, wendy, heidi):
    theirs = _chat(heidi, 2002, messages=1)
    for path in (f"/conversations/{theirs.pk}", f"/conversations/{theirs.pk}/messages"):
        answer = api.get(f"/agents/{wendy.pk}{path}")
        assert answer.status_code == 404
        assert "has no conversation" in answer.json()["detail"]


def test_reading_needs_the_conversation_view_permission(api_as, make_staff, wendy):
    chat = _chat(wendy, 1001, messages=1)
    viewer = api_as(make_staff("viewer", "agents.view_agent"))
    reader = api_as(make_staff("reader", "agents.view_agent", "conversations.view_conversation"))
    nobody = api_as(make_staff("nobody"))

    assert viewer.get(f"/agents/{wendy.pk}/conversations").status_code == 403
    assert viewer.get(f"/agents/{wendy.pk}/conversations/{chat.pk}/messages").status_code == 403
    assert nobody.get(f"/agents/{wendy.pk}/conversations/{chat.pk}/messages").status_code == 404
    assert reader.get(f"/agents/{wendy.pk}/conversations/{chat.pk}/messages").json()["count"] == 1


def test_without_a_token_it_is_401(api_as, wendy):
    chat = _chat(wendy, 1001)
    assert api_as(None).get(f"/agents/{wendy.pk}/conversations/{chat.pk}/messages").status_code == 401


def test_a_token_without_a_grant_on_the_agent_sees_nothing_of_it(api_as, make_staff, wendy, heidi):
    """A curator granted Wendy only: Heidi is "not found" everywhere, though the model permissions
    would allow it; Wendy stays readable, and writes need their permission too."""
    from django.contrib.auth.models import Group

    from agents.roles import CURATOR

    curator = make_staff("curator", agents=[wendy])
    curator.groups.add(Group.objects.get(name=CURATOR))
    api = api_as(curator)
    hers, theirs = _chat(wendy, 1001, messages=1), _chat(heidi, 2002, messages=1)

    assert [a["name"] for a in api.get("/agents").json()["items"]] == ["Wendy"]
    assert api.get(f"/agents/{heidi.pk}").status_code == 404
    assert api.get(f"/agents/{heidi.pk}/conversations").status_code == 404
    assert api.get(f"/agents/{heidi.pk}/conversations/{theirs.pk}/messages").status_code == 404
    assert api.post(f"/agents/{heidi.pk}/disable").status_code == 404
    assert api.get(f"/agents/{wendy.pk}/conversations/{hers.pk}/messages").json()["count"] == 1
    assert api.post(f"/agents/{wendy.pk}/disable").status_code == 403  # a curator runs no agents
