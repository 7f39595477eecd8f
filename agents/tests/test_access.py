"""agents/access.py: who may see and act on which agents."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, Permission

from agents.access import agents_for, has_agent_perm
from cindy_site.testing.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents():
    return [AgentFactory(name="Wendy"), AgentFactory(name="Bramble")]


def _staff(django_user_model, username: str, *perms: str):
    user = django_user_model.objects.create_user(username, password="pw", is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return django_user_model.objects.get(pk=user.pk)  # a fresh instance: no cached permissions


def test_a_superuser_sees_and_may_change_every_agent(agents, django_user_model):
    owner = django_user_model.objects.create_superuser("owner", "o@example.com", "pw")
    assert set(agents_for(owner)) == set(agents)
    assert set(agents_for(owner, "agents.change_agent")) == set(agents)
    assert has_agent_perm(owner, "agents.change_agent", agents[0])
    assert has_agent_perm(owner, "memory.delete_note", agents[1].pk)


def test_staff_with_the_view_permission_see_every_agent_but_change_none(agents, django_user_model):
    viewer = _staff(django_user_model, "viewer", "agents.view_agent")
    assert set(agents_for(viewer)) == set(agents)
    assert not agents_for(viewer, "agents.change_agent").exists()
    assert not has_agent_perm(viewer, "agents.change_agent", agents[0])
    assert has_agent_perm(viewer, "agents.view_agent", agents[0])


def test_a_model_permission_covers_every_agent(agents, django_user_model):
    editor = _staff(django_user_model, "editor", "memory.change_note")
    assert set(agents_for(editor, "memory.change_note")) == set(agents)
    assert has_agent_perm(editor, "memory.change_note", agents[1])
    assert not has_agent_perm(editor, "memory.delete_note", agents[1])


def test_staff_without_permissions_see_no_agent(agents, django_user_model):
    nobody = _staff(django_user_model, "nobody")
    assert not agents_for(nobody).exists()
    assert not agents_for(nobody, "agents.change_agent").exists()
    assert not has_agent_perm(nobody, "agents.view_agent", agents[0])


def test_inactive_and_anonymous_users_get_nothing(agents, django_user_model):
    gone = django_user_model.objects.create_superuser("gone", "g@example.com", "pw")
    gone.is_active = False
    gone.save()
    for user in (gone, AnonymousUser()):
        assert not agents_for(user).exists()
        assert not has_agent_perm(user, "agents.view_agent", agents[0])
