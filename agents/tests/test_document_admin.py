from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import AgentDocument
from agents.selectors import agent_document
from cindy_site.testing.factories import AgentFactory
from cindy_site.tests.test_admin_edits import form_data

pytestmark = pytest.mark.django_db


def test_a_document_added_and_edited_in_the_agent_admin_is_what_the_agent_reads(verified_client):
    agent = AgentFactory(name="Heidi")
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = form_data(verified_client.get(url))
    data.update(
        {
            "documents-TOTAL_FORMS": "1",
            "documents-0-name": "Friends.md",
            "documents-0-content": "Peter looks after the goats.",
        }
    )

    response = verified_client.post(url, data)

    assert response.status_code == 302, response.context and response.context["errors"]
    assert agent_document(agent_id=agent.pk, name="Friends") == "Peter looks after the goats."
    document = AgentDocument.objects.get(agent=agent)

    data = form_data(verified_client.get(url))
    data["documents-0-content"] = "Klara writes every month."
    assert verified_client.post(url, data).status_code == 302
    document.refresh_from_db()
    assert document.content == "Klara writes every month."


@pytest.mark.parametrize("name", ["../escape.md", "notes/inner.md", ".hidden.md", "back\\\\slash.md", ""])
def test_a_document_name_that_is_not_a_plain_file_name_is_refused(verified_client, name):
    agent = AgentFactory(name="Heidi")
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = form_data(verified_client.get(url))
    data.update({"documents-TOTAL_FORMS": "1", "documents-0-name": name, "documents-0-content": "x"})

    response = verified_client.post(url, data)

    assert response.status_code == 200
    assert not AgentDocument.objects.exists()
