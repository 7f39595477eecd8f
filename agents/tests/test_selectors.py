from __future__ import annotations

import pytest

from agents.models import AgentDocument
from agents.selectors import agent_document, missing_role_prompts, role_prompt_for, role_prompts_for_agent
from cindy_site.testing.factories import AgentFactory, RolePromptFactory

pytestmark = pytest.mark.django_db


def test_agent_prompt_overrides_the_global_one_only_for_that_agent():
    heidi, otto = AgentFactory(name="Heidi"), AgentFactory(name="Otto")
    RolePromptFactory(name="Chatbot", text="global")
    RolePromptFactory(name="Chatbot", text="heidi's", agent=heidi)

    assert role_prompt_for(agent=heidi, name="Chatbot").text == "heidi's"
    assert role_prompt_for(agent=otto, name="Chatbot").text == "global"
    assert role_prompt_for(agent=otto, name="Nope") is None


def test_role_prompts_follow_the_persona_order_and_missing_names_are_listed():
    heidi = AgentFactory(name="Heidi", role_prompt_names=["Think", "Chatbot", "Ghost"])
    RolePromptFactory(name="Chatbot", text="global chat")
    RolePromptFactory(name="Think", text="heidi think", agent=heidi)
    RolePromptFactory(name="Think", text="global think")

    assert [p.text for p in role_prompts_for_agent(agent=heidi)] == ["heidi think", "global chat"]
    assert missing_role_prompts(agent=heidi) == ["Ghost"]


def test_agent_document_is_found_by_its_file_name_with_or_without_the_md_suffix():
    heidi, otto = AgentFactory(name="Heidi"), AgentFactory(name="Otto")
    AgentDocument.objects.create(agent=heidi, name="Friends.md", content="Otto likes chess.")
    AgentDocument.objects.create(agent=heidi, name="notes", content="no suffix")

    assert agent_document(agent_id=heidi.pk, name="Friends.md") == "Otto likes chess."
    assert agent_document(agent_id=heidi.pk, name="Friends") == "Otto likes chess."
    assert agent_document(agent_id=heidi.pk, name="notes.md") == "no suffix"
    assert agent_document(agent_id=heidi.pk, name="friends.md") is None
    assert agent_document(agent_id=otto.pk, name="Friends.md") is None
    assert agent_document(agent_id=heidi.pk, name="") is None


def test_agent_document_prefers_the_exact_name_over_the_suffixed_one():
    heidi = AgentFactory(name="Heidi")
    AgentDocument.objects.create(agent=heidi, name="plan", content="bare")
    AgentDocument.objects.create(agent=heidi, name="plan.md", content="markdown")

    assert agent_document(agent_id=heidi.pk, name="plan") == "bare"
    assert agent_document(agent_id=heidi.pk, name="plan.md") == "markdown"
