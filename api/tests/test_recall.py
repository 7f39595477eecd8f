"""GET /api/v1/agents/{id}/recall: the recall index searched within the caller's grants."""

from __future__ import annotations

import datetime as dt

import pytest

from conversations.models import Conversation, Message
from memory.models import Memory

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

AT = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def _chat(agent, peer_id: int, *texts: str) -> Conversation:
    chat = Conversation.objects.create(agent=agent, peer_id=peer_id, kind="dm", title=f"Peer {peer_id}")
    for n, text in enumerate(texts, start=1):
        Message.objects.create(
            conversation=chat, message_id=n, sender_id=peer_id, date=AT + dt.timedelta(minutes=n), text=text
        )
    return chat


def test_hits_carry_kind_conversation_message_date_text_and_score(api, wendy):
    chat = _chat(wendy, 1001, "my sister's wedding is in June", "the weather is fine")

    answer = api.get(f"/agents/{wendy.pk}/recall", q="weddings")

    assert answer.status_code == 200
    [hit] = answer.json()["items"]
    assert {k: hit[k] for k in ("kind", "conversation_id", "message_id", "text")} == {
        "kind": "message",
        "conversation_id": chat.pk,
        "message_id": 1,
        "text": "my sister's wedding is in June",
    }
    assert dt.datetime.fromisoformat(hit["date"]) == AT + dt.timedelta(minutes=1)
    assert hit["score"] > 0


def test_a_conversation_recalls_only_its_own_and_the_global_entries(api, wendy):
    alice = _chat(wendy, 1001, "hello there")
    _chat(wendy, 2002, "Bob's secret recipe is paprika")
    Memory.objects.create(agent=wendy, kind="episodic", content="a secret garden in my childhood", created=AT)

    scoped = api.get(f"/agents/{wendy.pk}/recall", q="secret", conversation=alice.pk).json()["items"]
    everything = api.get(f"/agents/{wendy.pk}/recall", q="secret").json()["items"]

    assert [(h["kind"], h["conversation_id"]) for h in scoped] == [("memory", None)]
    assert sorted(h["kind"] for h in everything) == ["memory", "message"]


def test_another_agent_s_conversation_is_404(api, wendy, heidi):
    theirs = _chat(heidi, 2002, "hello")
    answer = api.get(f"/agents/{wendy.pk}/recall", q="hello", conversation=theirs.pk)
    assert answer.status_code == 404
    assert answer.json()["field"] == "conversation"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"q": "?!"}, "q"),
        ({"q": ""}, "q"),
        ({"q": "x", "limit": 0}, "limit"),
        ({"q": "x", "limit": 101}, "limit"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(api, wendy, params, field):
    answer = api.get(f"/agents/{wendy.pk}/recall", **params)
    assert answer.status_code == 422
    assert answer.json()["field"] == field


def test_a_query_without_words_says_why(api, wendy):
    answer = api.get(f"/agents/{wendy.pk}/recall", q="?!")
    assert answer.status_code == 422
    assert "no words to search for" in answer.json()["detail"]


def test_only_the_kinds_the_caller_may_view_are_searched(api_as, make_staff, wendy, heidi):
    _chat(wendy, 1001, "the lighthouse at dawn")
    Memory.objects.create(agent=wendy, kind="episodic", content="I love the lighthouse", created=AT)
    reader = api_as(make_staff("reader", "agents.view_agent", "conversations.view_conversation"))
    curator = api_as(make_staff("curator", "agents.view_agent", "memory.view_memory"))
    nothing = api_as(make_staff("viewer", "agents.view_agent"))
    stranger = api_as(make_staff("stranger", "agents.view_agent", "memory.view_memory", agents=[heidi]))

    assert [h["kind"] for h in reader.get(f"/agents/{wendy.pk}/recall", q="lighthouse").json()["items"]] == [
        "message"
    ]
    assert [h["kind"] for h in curator.get(f"/agents/{wendy.pk}/recall", q="lighthouse").json()["items"]] == [
        "memory"
    ]
    refused = nothing.get(f"/agents/{wendy.pk}/recall", q="lighthouse")
    assert refused.status_code == 403 and "may view none" in refused.json()["detail"]
    assert stranger.get(f"/agents/{wendy.pk}/recall", q="lighthouse").status_code == 404


def test_without_a_token_it_is_401(api_as, wendy):
    assert api_as(None).get(f"/agents/{wendy.pk}/recall", q="x").status_code == 401
