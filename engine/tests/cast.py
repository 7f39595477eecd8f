"""The cast shared by engine and conversation tests: agents on the sandbox and the people they talk to."""

from __future__ import annotations

import pytest

from agents.models import Agent


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


@pytest.fixture
def agent(db) -> Agent:
    """Wendy, a sandbox agent with a short typing delay."""
    return make_agent()


@pytest.fixture
def other_agent(db) -> Agent:
    return make_agent("Heidi", phone="+15550000002")
