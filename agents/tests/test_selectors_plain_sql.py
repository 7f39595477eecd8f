"""The agent reads that run per message or per gateway pass, in plain SQL, give what the ORM gives."""

from __future__ import annotations

import pytest

from agents.models import Agent, RolePrompt
from agents.selectors import (
    WANTED_ROW_UPDATED,
    agent_by_pk,
    agents_wanted_rows,
    role_prompts_named,
    telegram_user_is_agent,
)
from cindy_site.rows import from_row
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_an_agent_is_read_as_the_orm_reads_it(django_assert_num_queries):
    agent = make_agent(telegram_user_id=4242)
    with django_assert_num_queries(1):
        found = agent_by_pk(agent_id=agent.pk)
    assert _values(found) == _values(Agent.objects.get(pk=agent.pk))
    assert agent_by_pk(agent_id=agent.pk + 1) is None
    assert telegram_user_is_agent(user_id=4242) and not telegram_user_is_agent(user_id=4243)


def test_the_wanted_agents_are_the_enabled_running_ones_in_name_order_as_driver_rows():
    zoe, amy = make_agent("Zoe", phone="+15550000002"), make_agent("Amy", phone="+15550000003")
    make_agent("Off", phone="+15550000004", disabled=True)
    make_agent("Halt", phone="+15550000005", stopped=True)
    found = agents_wanted_rows()
    assert [row[0] for row in found] == [amy.pk, zoe.pk]
    assert _values(from_row(Agent, found[0])) == _values(
        Agent.objects.get(pk=amy.pk)
    )  # id first, _meta order
    assert [row[0] for row in agents_wanted_rows(names=["Zoe", "Off"])] == [zoe.pk]
    assert agents_wanted_rows() == found  # unchanged rows compare equal
    # The stamps: each wanted id with its `updated` as the whole row has it; whole rows of some ids.
    assert agents_wanted_rows(stamps=True) == [(row[0], row[WANTED_ROW_UPDATED]) for row in found]
    assert agents_wanted_rows(ids=[zoe.pk, zoe.pk + 100]) == [found[1]]
    assert agents_wanted_rows(ids=[]) == []


def test_an_update_of_agents_stamps_them_as_a_save_does():
    """`Agent.objects...update()` sets `updated` (auto_now does only on save): the gateway's lease step
    reads the stamps to find the rows that changed."""
    agent = make_agent()
    before = Agent.objects.get(pk=agent.pk).updated
    assert Agent.objects.filter(pk=agent.pk).update(typing_speed=12) == 1
    after = Agent.objects.get(pk=agent.pk)
    assert after.typing_speed == 12 and after.updated > before


def test_role_prompts_come_global_first_then_the_agents_own():
    agent, other = make_agent(), make_agent("Other", phone="+15550000009")
    RolePrompt.objects.create(name="Style", text="global")
    RolePrompt.objects.create(name="Style", text="mine", agent=agent)
    RolePrompt.objects.create(name="Style", text="theirs", agent=other)
    RolePrompt.objects.create(name="Unasked", text="no")
    assert role_prompts_named(names=["Style", "Missing"], agent_id=agent.pk) == [
        ("Style", "global"),
        ("Style", "mine"),
    ]
    assert role_prompts_named(names=[], agent_id=agent.pk) == []
