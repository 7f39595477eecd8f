"""Per-agent access in the admin (`agents.admin_scope`): a curator granted Lola works on Lola's
records only; every registered model is either scoped to its agent, owner-only, or shared."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.access import AGENT_PATHS, OWNER_ONLY
from agents.admin_scope import AgentScopedAdmin
from agents.models import Agent, AgentGrant
from agents.roles import CURATOR, OPERATOR
from cindy_site.testing.staff import verify_client
from memory.models import Memory
from sandbox.models import SandboxChat
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db

#: Registered models that belong to no agent, with the reason.
SHARED = {
    "auth.user": "staff accounts",
    "auth.group": "roles",
    "otp_totp.totpdevice": "staff sign-in devices",
    "otp_static.staticdevice": "staff sign-in devices",
    "agents.telegramdevice": "staff sign-in devices",
    "media_catalog.mediadescription": "the shared media catalogue",
    "media_catalog.stickerset": "the shared media catalogue",
    "media_catalog.sticker": "the shared media catalogue",
    "llm.modelprice": "LLM prices of the installation",
    "llm.offeredmodel": "LLM models on offer",
    "django_q.schedule": "task queue",
    "django_q.success": "task queue",
    "django_q.failure": "task queue",
    "django_q.ormq": "task queue",
    "socialaccount.socialaccount": "staff sign-in links",
    "socialaccount.socialapp": "sign-in providers",
    "socialaccount.socialtoken": "sign-in tokens",
    "account.emailaddress": "staff addresses",
    "api.apitoken": "staff users' own API tokens (each sees their own; owners all)",
    "llm.siteparameter": "global parameters of the installation",
}


def test_every_admin_model_is_scoped_owner_only_or_shared():
    unclassified = []
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        if label in AGENT_PATHS or label in OWNER_ONLY:
            assert isinstance(model_admin, AgentScopedAdmin), label
        elif label not in SHARED and not model._meta.proxy:
            unclassified.append(label)
    assert not unclassified, (
        f"add each to agents.access.AGENT_PATHS, OWNER_ONLY or SHARED here: {unclassified}"
    )


@pytest.fixture
def cast(db):
    lola = Agent.objects.create(name="Lola", phone="+15550000201", instructions="x", transport="sandbox")
    bernd = Agent.objects.create(name="Bernd", phone="+15550000202", instructions="x", transport="sandbox")
    return {
        "lola": lola,
        "bernd": bernd,
        "mine": Memory.objects.create(agent=lola, content="Lola likes tea", kind="episodic"),
        "theirs": Memory.objects.create(agent=bernd, content="Bernd hides the key", kind="episodic"),
    }


def _signed_in(client, django_user_model, role: str, agent: Agent):
    user = django_user_model.objects.create_user(f"{role.lower()}-1", "c@example.com", "x", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    AgentGrant.objects.create(user=user, agent=agent)
    client.force_login(user)
    verify_client(client, TOTPDevice.objects.create(user=user, name="phone", confirmed=True))
    return client


def test_a_curator_lists_and_opens_only_the_granted_agents_memories(client, django_user_model, cast):
    curator = _signed_in(client, django_user_model, CURATOR, cast["lola"])

    listing = curator.get("/admin/memory/memory/").content.decode()
    assert "Lola likes tea" in listing and "Bernd hides the key" not in listing
    assert curator.get(f"/admin/memory/memory/{cast['mine'].pk}/change/").status_code == 200
    other = curator.get(f"/admin/memory/memory/{cast['theirs'].pk}/change/")
    assert other.status_code == 302 and other["Location"] == "/admin/"
    # Editing or deleting another agent's memory by POST does nothing either.
    curator.post(f"/admin/memory/memory/{cast['theirs'].pk}/delete/", {"post": "yes"})
    assert Memory.objects.filter(pk=cast["theirs"].pk).exists()


def test_the_add_form_offers_only_the_granted_agents(client, django_user_model, cast):
    curator = _signed_in(client, django_user_model, CURATOR, cast["lola"])

    form = curator.get("/admin/memory/memory/add/").content.decode()
    assert ">Lola<" in form and ">Bernd<" not in form
    refused = curator.post(
        "/admin/memory/memory/add/", {"agent": cast["bernd"].pk, "kind": "episodic", "content": "x"}
    )
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert not Memory.objects.filter(content="x").exists()


def test_filters_and_autocomplete_name_only_the_granted_agents(client, django_user_model, cast):
    curator = _signed_in(client, django_user_model, CURATOR, cast["lola"])
    cleo = Agent.objects.create(name="Cleo", phone="+15550000203", instructions="x")
    Memory.objects.create(agent=cleo, content="Cleo sings", kind="episodic")
    AgentGrant.objects.create(user=django_user_model.objects.get(username="curator-1"), agent=cleo)

    listing = curator.get("/admin/memory/memory/").content.decode()
    filters = listing[listing.index('id="changelist-filter"') :]
    assert "Lola" in filters and "Cleo" in filters and "Bernd" not in filters
    found = curator.get(
        "/admin/autocomplete/",
        {"app_label": "agents", "model_name": "agentgrant", "field_name": "agent", "term": ""},
    )
    assert found.status_code == 200
    assert sorted(row["text"] for row in found.json()["results"]) == ["Cleo", "Lola"]


def test_an_operator_does_not_see_sandbox_chats_which_belong_to_no_single_agent(
    client, django_user_model, cast
):
    said = sandbox_say(agent=cast["bernd"], text="hello")
    operator = _signed_in(client, django_user_model, OPERATOR, cast["lola"])

    assert SandboxChat.objects.filter(pk=said.chat_id).exists()
    assert operator.get(f"/admin/sandbox/sandboxchat/{said.chat_id}/change/").status_code == 302


def test_the_agents_own_pages_are_not_found_for_another_agent(client, django_user_model, cast):
    operator = _signed_in(client, django_user_model, OPERATOR, cast["lola"])

    assert operator.get(f"/admin/agents/agent/{cast['bernd'].pk}/telegram/").status_code == 404
    assert operator.post(f"/admin/agents/agent/{cast['bernd'].pk}/restart/").status_code == 404
    assert operator.get(f"/admin/memory/scheduleentry/timeline/{cast['bernd'].pk}/").status_code in (403, 404)
