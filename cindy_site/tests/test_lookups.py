"""`in_ids` (cindy_site/lookups.py): the rows `__in` finds, on keys and foreign keys, on both databases."""

from __future__ import annotations

import pytest
from django.db.models import Q

from agents.models import Agent
from cindy_site.lookups import Ids
from conversations.models import Conversation
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def chats():
    agents = [make_agent(f"Lk{i}", phone=f"+1555000{i:04d}") for i in range(4)]
    return agents, [
        Conversation.objects.create(agent=a, peer_id=500 + i, kind="dm") for i, a in enumerate(agents)
    ]


def test_in_ids_finds_the_rows_in_finds(chats):
    agents, _ = chats
    wanted = [agents[0].pk, agents[2].pk, 10**9]
    for ids in (wanted, set(wanted), (pk for pk in wanted), [str(pk) for pk in wanted], Ids(wanted)):
        found = set(Conversation.objects.filter(agent_id__in_ids=ids).values_list("agent_id", flat=True))
        assert found == {agents[0].pk, agents[2].pk}
    assert set(Agent.objects.filter(pk__in_ids=Ids(wanted)).values_list("name", flat=True)) == {"Lk0", "Lk2"}
    assert Conversation.objects.exclude(agent_id__in_ids=Ids(wanted)).count() == 2
    by_relation = Conversation.objects.filter(agent__in_ids=wanted).values_list("agent_id", flat=True)
    assert set(by_relation) == {agents[0].pk, agents[2].pk}
    assert set(Agent.objects.filter(pk__in_ids=wanted).values_list("name", flat=True)) == {"Lk0", "Lk2"}
    assert Conversation.objects.filter(agent_id__in_ids=wanted).count() == 2


def test_no_ids_match_nothing_and_leave_the_other_side_of_an_or(chats):
    agents, convs = chats
    assert list(Conversation.objects.filter(agent_id__in_ids=[])) == []
    assert list(Conversation.objects.filter(agent_id__in_ids=Ids([]))) == []
    either = Conversation.objects.filter(Q(agent_id__in_ids=[]) | Q(agent_id__in_ids=[agents[1].pk]))
    assert list(either) == [convs[1]]
    assert Conversation.objects.exclude(agent_id__in_ids=[]).count() == 4


def test_an_id_that_is_no_integer_is_refused_by_name():
    with pytest.raises(ValueError, match="abc"):
        Conversation.objects.filter(agent_id__in_ids=[1, "abc"])
    with pytest.raises(ValueError, match="abc"):
        Ids([1, "abc"])


def test_ids_are_opaque_to_the_filters_walk_over_lists():
    """A list given to `filter()` is walked item by item (each resolved as a possible expression, and
    on a relation each checked for its model); `Ids` is neither a list nor iterable, so it is not."""
    ids = Ids(range(1000))
    assert not isinstance(ids, list | tuple) and not hasattr(ids, "__iter__")
    assert len(ids) == 1000 and ids.values[:3] == (0, 1, 2)
