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
