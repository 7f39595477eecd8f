"""Per-agent access (`agents.access`) and the staff roles (`agents.roles`)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command

from agents.access import agents_for, has_agent_perm, is_owner, visible_agent_ids, visible_to
from agents.models import Agent, AgentGrant
from agents.roles import CURATOR, OPERATOR, OWNER, roles_sync
from conversations.models import Conversation, Message
from memory.models import Memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def lola(db) -> Agent:
    return Agent.objects.create(name="Lola", phone="+15550000101", instructions="x")


@pytest.fixture
def bernd(db) -> Agent:
    return Agent.objects.create(name="Bernd", phone="+15550000102", instructions="x")


def _member(django_user_model, name: str, role: str | None = None, **fields):
    user = django_user_model.objects.create_user(name, f"{name}@example.com", "x", is_staff=True, **fields)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def test_the_roles_exist_after_migrate_with_their_permissions(django_user_model):
    owner, operator, curator = (Group.objects.get(name=n) for n in (OWNER, OPERATOR, CURATOR))
    assert owner.permissions.count() == Permission.objects.count()
    codes = set(curator.permissions.values_list("codename", flat=True))
    assert {"change_memory", "change_mediadescription", "view_conversation", "view_agent"} <= codes
    assert not codes & {"change_agent", "change_conversation", "add_sandboxmessage", "view_llmcall"}
    codes = set(operator.permissions.values_list("codename", flat=True))
    assert {
        "change_agent",
        "change_conversation",
        "add_sandboxmessage",
        "view_llmcall",
        "change_memory",
    } <= codes
    assert not codes & {"delete_agent", "add_user", "change_group", "add_agentgrant", "change_accessrequest"}


def test_roles_sync_puts_back_what_an_edit_took_away(capsys):
    curator = Group.objects.get(name=CURATOR)
    curator.permissions.clear()
    curator.permissions.add(Permission.objects.get(codename="delete_agent"))

    call_command("roles")

    codes = set(curator.permissions.values_list("codename", flat=True))
    assert "delete_agent" not in codes and "change_memory" in codes
    assert "Curator: " in capsys.readouterr().out
    assert roles_sync()[CURATOR] == len(codes)


def test_a_curator_sees_only_the_agents_granted_to_them(django_user_model, lola, bernd):
    curator = _member(django_user_model, "cora", CURATOR)
    assert list(agents_for(curator)) == []
    AgentGrant.objects.create(user=curator, agent=lola)

    assert list(agents_for(curator)) == [lola]
    assert has_agent_perm(curator, "memory.change_memory", lola)
    assert has_agent_perm(curator, "memory.change_memory", lola.pk)
    assert not has_agent_perm(curator, "memory.change_memory", bernd)
    # The grant widens where the role applies, not what it allows.
    assert not has_agent_perm(curator, "conversations.change_conversation", lola)
    assert list(agents_for(curator, "conversations.change_conversation")) == []


def test_a_grant_to_a_group_covers_its_members(django_user_model, lola, bernd):
    team = Group.objects.create(name="Berlin desk")
    operator = _member(django_user_model, "otto", OPERATOR)
    operator.groups.add(team)
    AgentGrant.objects.create(group=team, agent=bernd)

    assert list(agents_for(operator, "conversations.change_conversation")) == [bernd]


def test_a_grant_without_an_agent_covers_every_agent(django_user_model, lola, bernd):
    operator = _member(django_user_model, "otto", OPERATOR)
    AgentGrant.objects.create(user=operator, agent=None)

    assert set(agents_for(operator)) == {lola, bernd}
    assert visible_agent_ids(operator) is None


def test_owners_and_superusers_see_every_agent_without_grants(django_user_model, lola, bernd):
    owner = _member(django_user_model, "olga", OWNER)
    root = django_user_model.objects.create_superuser("root", "root@example.com", "x")

    for user in (owner, root):
        assert is_owner(user)
        assert set(agents_for(user, "agents.delete_agent")) == {lola, bernd}


def test_an_inactive_user_sees_nothing(django_user_model, lola):
    curator = _member(django_user_model, "gone", CURATOR, is_active=False)
    AgentGrant.objects.create(user=curator, agent=lola)
    root = django_user_model.objects.create_superuser("root", "root@example.com", "x", is_active=False)

    assert list(agents_for(curator)) == [] and list(agents_for(root)) == []
    assert not has_agent_perm(root, "agents.view_agent", lola)


def test_records_of_other_agents_are_filtered_out(django_user_model, lola, bernd):
    curator = _member(django_user_model, "cora", CURATOR)
    AgentGrant.objects.create(user=curator, agent=lola)
    mine = Conversation.objects.create(agent=lola, peer_id=1, kind="dm")
    theirs = Conversation.objects.create(agent=bernd, peer_id=1, kind="dm")
    from cindy_site.clock import now

    Message.objects.create(conversation=mine, message_id=1, sender_id=1, text="a", date=now())
    Message.objects.create(conversation=theirs, message_id=1, sender_id=1, text="b", date=now())
    Memory.objects.create(agent=lola, content="lola's", kind="episodic")
    Memory.objects.create(agent=bernd, content="bernd's", kind="episodic")

    assert list(visible_to(curator, Conversation.objects.all())) == [mine]
    assert list(visible_to(curator, Message.objects.values_list("text", flat=True))) == ["a"]
    assert list(visible_to(curator, Memory.objects.values_list("content", flat=True))) == ["lola's"]


def test_a_grant_names_a_user_or_a_group_not_both(django_user_model, lola):
    from django.db import IntegrityError

    user = _member(django_user_model, "cora")
    with pytest.raises(IntegrityError):
        AgentGrant.objects.create(user=user, group=Group.objects.get(name=CURATOR), agent=lola)
