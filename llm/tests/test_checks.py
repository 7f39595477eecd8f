from __future__ import annotations

from llm.checks import check_llm_names


def test_unknown_agent_llm_is_reported(agent, dm):
    agent.llm = "gpt-banana"
    agent.save()
    dm.llm_model = "openai:"
    dm.save()

    errors = check_llm_names(None)

    assert [e.id for e in errors] == ["cindy.E102", "cindy.E103"]
    assert "agent Wendy" in errors[0].msg and "gpt-banana" in errors[0].msg


def test_known_names_pass(agent, settings):
    agent.llm = "openrouter:meta/llama"
    agent.save()

    assert check_llm_names(None) == []


def test_bad_default_and_media_model_are_reported(db, settings):
    settings.DEFAULT_AGENT_LLM = "nope"
    settings.MEDIA_MODEL = "also-nope"

    assert [e.id for e in check_llm_names(None)] == ["cindy.E101", "cindy.E101"]
