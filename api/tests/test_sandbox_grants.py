"""A per-agent grant bounds the sandbox groups reached through the API: a group title is looked up only
among the groups whose every agent the caller may see."""

from __future__ import annotations

import pytest

from sandbox.models import SandboxChat, SandboxMessage

pytestmark = pytest.mark.django_db

SANDBOX_OPERATOR = ("agents.view_agent", "sandbox.add_sandboxmessage", "sandbox.view_sandboxmessage")


@pytest.fixture
def operators(api_as, make_staff, wendy, heidi):
    """Two operators: one granted Wendy only, one granted Heidi only."""
    return (
        api_as(make_staff("wendy-op", *SANDBOX_OPERATOR, agents=[wendy])),
        api_as(make_staff("heidi-op", *SANDBOX_OPERATOR, agents=[heidi])),
    )


def _texts(client, agent, **params) -> list[str]:
    shown = client.get(f"/agents/{agent.pk}/sandbox/messages", **params)
    assert shown.status_code == 200, shown.content
    return [m["text"] for m in shown.json()["items"]]


def test_a_title_of_another_operator_s_group_starts_a_new_group(operators, wendy, heidi, clock):
    wendy_op, heidi_op = operators
    secret = heidi_op.post(
        f"/agents/{heidi.pk}/sandbox/messages", {"text": "the code is 4711", "group": "Secret room"}
    )
    assert secret.status_code == 201, secret.content

    mine = wendy_op.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hello", "group": "Secret room"})

    assert mine.status_code == 201, mine.content
    assert mine.json()["chat_id"] != secret.json()["chat_id"]
    heidis_room = SandboxChat.objects.get(pk=secret.json()["chat_id"])
    assert sorted(heidis_room.members.values_list("name", flat=True)) == ["Heidi", "You"]
    assert list(SandboxMessage.objects.filter(chat=heidis_room).values_list("text", flat=True)) == [
        "the code is 4711"
    ]
    assert _texts(wendy_op, wendy, group="Secret room") == ["hello"]
    assert _texts(heidi_op, heidi, group="Secret room") == ["the code is 4711"]
    assert SandboxChat.objects.filter(title="Secret room").count() == 2


def test_a_group_shared_with_an_agent_beyond_the_grant_is_neither_read_nor_written(
    api, operators, wendy, heidi, clock
):
    """The owner put both agents in one group: the operator granted Wendy alone may not read it, and
    writing to its title starts a group of their own rather than reaching Heidi's turns."""
    wendy_op, _ = operators
    shared = api.post(f"/agents/{heidi.pk}/sandbox/messages", {"text": "for Heidi", "group": "Both"})
    joined = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "for both", "group": "Both"})
    assert joined.json()["chat_id"] == shared.json()["chat_id"]  # the owner sees both agents

    assert _texts(wendy_op, wendy, group="Both") == []
    said = wendy_op.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "only Wendy", "group": "Both"})

    assert said.status_code == 201 and said.json()["chat_id"] != shared.json()["chat_id"]
    assert list(
        SandboxMessage.objects.filter(chat_id=shared.json()["chat_id"]).values_list("text", flat=True)
    ) == ["for Heidi", "for both"]
    assert _texts(wendy_op, wendy, group="Both") == ["only Wendy"]
    # The owner, who sees both, still writes in the shared group (the oldest of the title Wendy is in).
    again = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "owner again", "group": "Both"})
    assert again.json()["chat_id"] == shared.json()["chat_id"]


def test_an_operator_granted_both_agents_joins_the_existing_group(api_as, make_staff, wendy, heidi, clock):
    both = api_as(make_staff("both-op", *SANDBOX_OPERATOR, agents=[wendy, heidi]))
    first = both.post(f"/agents/{heidi.pk}/sandbox/messages", {"text": "one", "group": "Club"})
    second = both.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "two", "group": "Club"})
    assert first.json()["chat_id"] == second.json()["chat_id"]
    assert _texts(both, wendy, group="Club") == ["one", "two"]


def test_a_chat_is_named_by_its_id_only_within_the_grants(operators, wendy, heidi, clock):
    wendy_op, heidi_op = operators
    theirs = heidi_op.post(f"/agents/{heidi.pk}/sandbox/messages", {"text": "secret", "group": "Secret room"})
    mine = wendy_op.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi", "group": "Book club"})
    their_id, my_id = theirs.json()["chat_id"], mine.json()["chat_id"]

    read = wendy_op.get(f"/agents/{wendy.pk}/sandbox/messages", chat_id=their_id)
    assert (read.status_code, read.json()["field"]) == (404, "chat_id")
    written = wendy_op.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "in?", "chat_id": their_id})
    assert (written.status_code, written.json()["field"]) == (422, "chat_id")
    assert "no sandbox chat of that id that you may see" in written.json()["detail"]
    assert list(SandboxMessage.objects.filter(chat_id=their_id).values_list("text", flat=True)) == ["secret"]

    again = wendy_op.post(
        f"/agents/{wendy.pk}/sandbox/messages", {"text": "by id", "as_name": "Bea", "chat_id": my_id}
    )
    assert (again.status_code, again.json()["chat_id"]) == (201, my_id)
    assert _texts(wendy_op, wendy, chat_id=my_id) == ["hi", "by id"]
    both = wendy_op.post(
        f"/agents/{wendy.pk}/sandbox/messages", {"text": "x", "chat_id": my_id, "group": "Book club"}
    )
    assert (both.status_code, both.json()["field"]) == (422, "chat_id")


def test_a_direct_message_named_by_id_is_written_only_by_its_partner(api, wendy, clock):
    dm = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hello", "as_name": "Ann"}).json()[
        "chat_id"
    ]

    stranger = api.post(
        f"/agents/{wendy.pk}/sandbox/messages", {"text": "me too", "as_name": "Bob", "chat_id": dm}
    )
    partner = api.post(
        f"/agents/{wendy.pk}/sandbox/messages", {"text": "again", "as_name": "Ann", "chat_id": dm}
    )

    assert (stranger.status_code, stranger.json()["field"]) == (422, "chat_id")
    assert "direct message with someone else" in stranger.json()["detail"]
    assert (partner.status_code, partner.json()["chat_id"]) == (201, dm)
