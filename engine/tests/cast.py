"""The cast shared by engine and conversation tests: agents on the sandbox and the people they talk to."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from agents.models import Agent, RolePrompt

SHIPPED_PROMPTS = Path(settings.BASE_DIR) / "configdir" / "prompts"


def make_agent(name: str = "Wendy", **fields) -> Agent:
    defaults = {
        "phone": "+15550000001",
        "instructions": f"You are {name}.",
        "transport": "sandbox",
        "llm": "gemini",
        "start_typing_delay": 1,
        "typing_speed": 100,
    }
    defaults.update(fields)
    return Agent.objects.create(name=name, **defaults)


def teach(agent: Agent, *names: str) -> Agent:
    """Give `agent` shipped role prompts (configdir/prompts/NAME.md, imported as global prompts), so it
    may use the kinds their SCHEMA_TASKS markers teach."""
    for name in names:
        text = (SHIPPED_PROMPTS / f"{name}.md").read_text(encoding="utf-8")
        RolePrompt.objects.get_or_create(name=name, scope_key=0, defaults={"text": text})
    agent.role_prompt_names = [*(agent.role_prompt_names or []), *names]
    agent.save(update_fields=["role_prompt_names"])
    return agent


@pytest.fixture
def agent(db) -> Agent:
    """Wendy, a sandbox agent with a short typing delay."""
    return make_agent()


@pytest.fixture
def other_agent(db) -> Agent:
    return make_agent("Heidi", phone="+15550000002")
