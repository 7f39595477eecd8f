"""The search on the agent's page and a conversation's search tab: the recall index, within the
user's grants, with bad input explained on the page."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import AgentGrant
from conversations.models import Conversation, Message
from dashboard.tests.conftest import HOSTILE, make_user
from engine.tests.cast import make_agent
from memory.models import Memory

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

AT = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def _visitor(username: str, *perms: str, agents: list | None = None) -> Client:
    """An OTP-verified staff member holding `perms`, granted every agent or only `agents`."""
    user = make_user(username)
    for agent in agents if agents is not None else [None]:
        AgentGrant.objects.create(user=user, agent=agent)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    device = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    client = Client()
    client.force_login(user)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()
    return client


def _chat(agent, peer_id: int, title: str, *texts: str) -> Conversation:
    chat = Conversation.objects.create(
        agent=agent, peer_id=peer_id, kind="dm", title=title, last_message_at=AT
    )
    for n, text in enumerate(texts, start=1):
        Message.objects.create(
            conversation=chat, message_id=n, sender_id=peer_id, date=AT + dt.timedelta(minutes=n), text=text
        )
    return chat


def _hits(response) -> list[tuple[str, str]]:
    """(kind, text) of each hit row, in page order."""
    html = response.content.decode()
    rows = re.findall(r'<tr class="recall-hit" data-kind="(\w+)">(.*?)</tr>', html, re.S)
    return [
        (kind, re.search(r'<td class="recall-text">(.*?)</td>', row, re.S).group(1)) for kind, row in rows
    ]


@pytest.fixture
def wendy(db):
    return make_agent("Wendy")


@pytest.fixture
def heidi(db):
    return make_agent("Heidi", phone="+15550000002")


@pytest.fixture
def reader():
    return _visitor("reader", "agents.view_agent", "conversations.view_conversation", "memory.view_memory")


def test_the_agent_page_finds_every_conversation_best_first_with_links(reader, wendy):
    alice = _chat(wendy, 1001, "Alice", "the lighthouse at dawn", "lunch was fine")
    bob = _chat(wendy, 2002, "Bob", "a lighthouse, a lighthouse keeper and his lighthouse")
    Memory.objects.create(agent=wendy, kind="episodic", content="I love the lighthouse", created=AT)

    response = reader.get(f"/dashboard/agents/{wendy.pk}/", {"q": "lighthouses"})

    assert response.status_code == 200
    hits = _hits(response)
    # The three that hold the word come first; a search by meaning may add weaker hits after them.
    assert sorted(hits[:3]) == sorted(
        [
            ("message", "the lighthouse at dawn"),
            ("message", "a lighthouse, a lighthouse keeper and his lighthouse"),
            ("memory", "I love the lighthouse"),
        ]
    )
    assert hits[0] == ("message", "a lighthouse, a lighthouse keeper and his lighthouse")  # most often
    html = response.content.decode()
    assert f'href="/dashboard/conversations/{bob.pk}/log/">Bob</a>' in html
    assert f'href="/dashboard/conversations/{alice.pk}/log/">Alice</a>' in html
    assert ">#1</td>" in html and "global" in html
    assert '<label for="recall-q">Search every conversation</label>' in html
    assert 'value="lighthouses"' in html


def test_a_conversation_finds_only_its_own_and_the_global_entries(reader, wendy):
    alice = _chat(wendy, 1001, "Alice", "a secret about the garden")
    _chat(wendy, 2002, "Bob", "Bob's secret recipe is paprika")
    Memory.objects.create(agent=wendy, kind="episodic", content="a secret garden in my childhood", created=AT)

    response = reader.get(f"/dashboard/conversations/{alice.pk}/search/", {"q": "secret"})

    assert response.status_code == 200
    assert sorted(_hits(response)) == [
        ("memory", "a secret garden in my childhood"),
        ("message", "a secret about the garden"),
    ]
    assert "paprika" not in response.content.decode()


def test_the_conversation_pages_carry_a_labelled_search_box(reader, wendy):
    alice = _chat(wendy, 1001, "Alice", "hello")
    html = reader.get(f"/dashboard/conversations/{alice.pk}/log/").content.decode()
    assert '<label for="conversation-search-q">Search this conversation</label>' in html
    assert f'action="/dashboard/conversations/{alice.pk}/search/"' in html
    assert f'href="/dashboard/agents/{wendy.pk}/"' in html


def test_without_the_conversation_permission_there_are_no_message_hits(wendy):
    _chat(wendy, 1001, "Alice", "the lighthouse at dawn")
    Memory.objects.create(agent=wendy, kind="episodic", content="I love the lighthouse", created=AT)
    curator = _visitor("curator", "agents.view_agent", "memory.view_memory")

    response = curator.get(f"/dashboard/agents/{wendy.pk}/", {"q": "lighthouse"})

    assert response.status_code == 200
    assert _hits(response) == [("memory", "I love the lighthouse")]
    assert "Searched only what you may read here: memory." in response.content.decode()


def test_a_user_who_may_read_none_of_it_is_told_so(wendy):
    _chat(wendy, 1001, "Alice", "the lighthouse at dawn")
    viewer = _visitor("viewer", "agents.view_agent")

    response = viewer.get(f"/dashboard/agents/{wendy.pk}/", {"q": "lighthouse"})

    assert response.status_code == 403
    assert _hits(response) == []
    assert "may view none of what recall searches on agent Wendy" in response.content.decode()


def test_another_agent_s_page_and_conversation_are_404(wendy, heidi):
    theirs = _chat(heidi, 2002, "Heidi's friend", "the lighthouse")
    granted = _visitor("granted", "agents.view_agent", "conversations.view_conversation", agents=[wendy])

    assert granted.get(f"/dashboard/agents/{heidi.pk}/", {"q": "lighthouse"}).status_code == 404
    assert (
        granted.get(f"/dashboard/conversations/{theirs.pk}/search/", {"q": "lighthouse"}).status_code == 404
    )
    assert granted.get(f"/dashboard/agents/{wendy.pk}/", {"q": "lighthouse"}).status_code == 200


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?!", "the query &#x27;?!&#x27; has no words to search for: send at least one word"),
        ("", "has no words to search for"),
        ("word " * 300, "the query is 1500 characters long: search with at most 1000 characters"),
    ],
)
def test_bad_input_is_explained_on_the_page(reader, wendy, query, message):
    _chat(wendy, 1001, "Alice", "hello")
    response = reader.get(f"/dashboard/agents/{wendy.pk}/", {"q": query})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert 'id="recall-error" role="alert"' in response.content.decode()


def test_nothing_found_says_so_and_a_page_without_a_query_searches_nothing(reader, wendy):
    _chat(wendy, 1001, "Alice", "hello")
    assert (
        "Nothing found for “zeppelin”"
        in reader.get(f"/dashboard/agents/{wendy.pk}/", {"q": "zeppelin"}).content.decode()
    )
    page = reader.get(f"/dashboard/agents/{wendy.pk}/").content.decode()
    assert "recall-hits" not in page and "recall-error" not in page and "Alice" in page


def test_hostile_text_in_a_hit_is_shown_as_text(reader, wendy):
    _chat(wendy, 1001, "Alice", f"lighthouse {HOSTILE}")
    html = reader.get(f"/dashboard/agents/{wendy.pk}/", {"q": "lighthouse"}).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_anonymous_visitor_is_sent_to_the_login(client, wendy):
    assert client.get(f"/dashboard/agents/{wendy.pk}/", {"q": "x"}).status_code == 302
