"""The console's home page lists models in groups by task; the engine's internals only for owners."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.test import Client
from django.utils.text import capfirst
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent, AgentGrant
from agents.roles import OPERATOR
from cindy_site.testing.staff import verify_client
from dashboard.admin_groups import GROUPS, INTERNAL, INTERNALS_NAME

pytestmark = pytest.mark.django_db


def _signed_in(django_user_model, name: str, *, superuser: bool = False, role: str | None = None) -> Client:
    user = django_user_model.objects.create_user(name, f"{name}@example.com", "x", is_staff=True)
    if superuser:
        user.is_superuser = True
        user.save(update_fields=["is_superuser"])
    if role:
        user.groups.add(Group.objects.get(name=role))
        AgentGrant.objects.create(user=user, agent=None)
    client = Client()
    client.force_login(user)
    verify_client(client, TOTPDevice.objects.create(user=user, name="phone", confirmed=True))
    return client


def _index(client: Client) -> tuple[list[str], list[str]]:
    """The index's group captions and model names, in order."""
    html = client.get("/admin/").content.decode()
    captions = re.findall(r'<caption>\s*<a [^>]*class="section"[^>]*>([^<]*)</a>', html)
    rows = re.findall(r'<th scope="row" id="[^"]*">\s*(?:<a [^>]*>)?\s*([^<]*?)\s*<', html)
    return captions, rows


@pytest.fixture
def agent(db):
    return Agent.objects.create(name="Lola", phone="+15550000201", instructions="x", transport="sandbox")


def test_an_owner_sees_the_groups_in_order_with_the_internals_last(django_user_model, agent):
    owner = _signed_in(django_user_model, "ada", superuser=True)

    captions, rows = _index(owner)
    assert captions == [name for name, _ in GROUPS] + [INTERNALS_NAME]
    assert {"Agent leases", "Task nodes", "Queued tasks", "Gateway wakes", "Backfill marks"} <= set(rows)
    assert {"Agents", "Conversations", "Memories", "Sign-in: backup codes"} <= set(rows)


def test_an_operator_sees_what_they_work_with_and_no_internals(django_user_model, agent):
    owner = _signed_in(django_user_model, "ada", superuser=True)
    operator = _signed_in(django_user_model, "olga", role=OPERATOR)

    captions, rows = _index(operator)
    assert INTERNALS_NAME not in captions
    assert captions[:3] == ["Agents", "Conversations", "Memory"]
    assert {"Agents", "Conversations", "Messages", "Memories", "Library items", "LLM calls"} <= set(rows)
    internal_names = {
        capfirst(model._meta.verbose_name_plural)
        for model in admin.site._registry
        if model._meta.label_lower in INTERNAL
    }
    assert {"Agent leases", "Task graphs", "Task nodes", "Gateway requests"} <= internal_names
    assert sorted(internal_names & set(rows)) == []
    assert internal_names <= set(_index(owner)[1])

    # Hidden from the list, not from the operator: a task node linked from the dashboard still opens.
    assert operator.get("/admin/conversations/tasknode/").status_code == 200
    # An app's own page leaves out the internals too.
    conversations_app = operator.get("/admin/conversations/").content.decode()
    assert "Conversations" in conversations_app and "Task nodes" not in conversations_app


def test_every_registered_model_has_a_group_or_is_internal():
    grouped = {label for _, members in GROUPS for label, _ in members}
    registered = {model._meta.label_lower for model in admin.site._registry}
    assert sorted(registered - grouped - INTERNAL) == []
    assert grouped & INTERNAL == set()
