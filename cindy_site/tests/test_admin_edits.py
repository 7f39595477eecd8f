"""Edits in the admin go through the curation services: their validation shows on the form."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent, RolePrompt
from memory.models import Memory

pytestmark = pytest.mark.django_db


def form_data(response) -> dict:
    """The POST a browser would send for an unchanged admin change form, inlines included."""
    data: dict = {}

    def add(form, prefix_name):
        for name in form.fields:
            value = form[name].value()
            if value is None or value is False:
                continue
            data[prefix_name(name)] = "on" if value is True else value

    form = response.context["adminform"].form
    add(form, lambda name: name)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        management = formset.management_form
        for name in management.fields:
            data[f"{formset.prefix}-{name}"] = management[name].value()
        for sub in formset.forms:
            add(sub, sub.add_prefix)
    return data


@pytest.fixture
def agent():
    return Agent.objects.create(name="Heidi", phone="+15550002", instructions="Be kind.")


def test_a_bad_timezone_is_refused_with_the_fix(verified_client, agent):
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = form_data(verified_client.get(url))
    data["timezone"] = "Mars/Base"

    response = verified_client.post(url, data)

    assert response.status_code == 200
    assert "not an IANA zone (e.g. Europe/Paris)" in response.content.decode()
    agent.refresh_from_db()
    assert agent.timezone == ""


def test_an_unknown_llm_name_is_refused(verified_client, agent):
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = form_data(verified_client.get(url))
    data["llm"] = "llama-9"
    response = verified_client.post(url, data)
    assert response.status_code == 200
    assert "is not a known name" in response.content.decode()


def test_agent_edits_with_a_new_memory_and_prompt_inline_are_saved(verified_client, clock, agent):
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = form_data(verified_client.get(url))
    data.update(
        {
            "timezone": "Europe/Paris",
            "memories-TOTAL_FORMS": "1",
            "memories-0-kind": "curated",
            "memories-0-partner_id": "4242",
            "memories-0-content": "Prefers tea",
            "prompts-TOTAL_FORMS": "1",
            "prompts-0-name": "Chatbot",
            "prompts-0-text": "Heidi's own chatbot prompt.",
        }
    )

    response = verified_client.post(url, data)

    assert response.status_code == 302, response.context and response.context["errors"]
    agent.refresh_from_db()
    assert agent.timezone == "Europe/Paris"
    memory = Memory.objects.get(agent=agent)
    assert (memory.partner_id, memory.content, memory.created) == (4242, "Prefers tea", clock.now())
    prompt = RolePrompt.objects.get(agent=agent)
    assert prompt.scope_key == agent.pk


def test_a_curated_memory_without_a_partner_is_refused(verified_client, agent):
    response = verified_client.post(
        reverse("admin:memory_memory_add"),
        {"agent": agent.pk, "kind": "curated", "content": "x", "extra": "{}", "position": 0},
    )
    assert response.status_code == 200
    assert "give their Telegram user id" in response.content.decode()
    assert not Memory.objects.exists()


def test_memories_filter_per_agent_and_partner(verified_client, agent):
    other = Agent.objects.create(name="Olive", phone="+15550003", instructions="x")
    Memory.objects.create(agent=agent, kind="curated", partner_id=1, content="a")
    Memory.objects.create(agent=agent, kind="curated", partner_id=2, content="b")
    Memory.objects.create(agent=other, kind="curated", partner_id=1, content="c")

    response = verified_client.get("/admin/memory/memory/", {"agent__id__exact": agent.pk, "partner_id": "1"})

    assert [m.content for m in response.context["cl"].queryset] == ["a"]
    assert "partner" in response.content.decode()


def test_the_memory_inline_names_each_field_and_its_row(verified_client, agent):
    """Its column headings are not read out with the fields: each field carries its own label."""
    Memory.objects.create(agent=agent, kind="curated", partner_id=1, content="Likes tea")
    Memory.objects.create(agent=agent, kind="episodic", content="Went to Foxton")

    page = verified_client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    for label in ("Kind, memory 1", "Content, memory 2", "Partner id, memory 2", "Delete, memory 1"):
        assert f'aria-label="{label}"' in page
    assert 'aria-label="Content, new memory"' in page  # the row "Add another" copies
