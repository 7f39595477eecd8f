from __future__ import annotations

import pytest

from agents.selectors import missing_role_prompts, role_prompt_for, role_prompts_for_agent
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
