from __future__ import annotations

import pytest

from llm.routing import Route, UnknownModelError, resolve, route_for


@pytest.mark.parametrize(
    ("name", "route"),
    [
        ("gemini", Route("gemini", "gemini-3-flash-preview")),
        ("Gemini", Route("gemini", "gemini-3-flash-preview")),
        ("gemini-2.5-flash", Route("gemini", "gemini-2.5-flash")),
        ("grok", Route("grok", "grok-4-fast-non-reasoning")),
        ("grok-3-mini", Route("grok", "grok-3-mini")),
        ("gpt", Route("openai", "gpt-5-mini")),
        ("openai", Route("openai", "gpt-5-mini")),
        ("gpt-5-mini", Route("openai", "gpt-5-mini")),
        ("gpt-4o", Route("openai", "gpt-4o")),
        ("openai:gpt-4o-mini", Route("openai", "gpt-4o-mini")),
        ("anthropic/claude-sonnet-4.5", Route("openrouter", "anthropic/claude-sonnet-4.5")),
        ("google/gemini-2.5-flash", Route("openrouter", "google/gemini-2.5-flash")),
        ("openrouter", Route("openrouter", "openrouter/auto")),
        ("openrouter:meta/llama", Route("openrouter", "meta/llama")),
        ("claude", Route("anthropic", "claude-sonnet-4-6")),
        ("anthropic", Route("anthropic", "claude-sonnet-4-6")),
        ("claude-haiku-4-5", Route("anthropic", "claude-haiku-4-5")),
        ("Claude-Opus-4-1-20250805", Route("anthropic", "Claude-Opus-4-1-20250805")),
        ("anthropic:claude-opus-4-5", Route("anthropic", "claude-opus-4-5")),
    ],
)
def test_every_name_the_original_accepts_routes_the_same_way(name, route, settings):
    settings.GEMINI_MODEL = settings.GROK_MODEL = settings.OPENROUTER_MODEL = ""
    assert resolve(name) == route


@pytest.mark.parametrize("name", ["", "  ", "none", "None", "null"])
def test_empty_none_and_null_mean_the_default(name, settings):
    settings.DEFAULT_AGENT_LLM = "grok"
    settings.GROK_MODEL = ""
    assert resolve(name) == Route("grok", "grok-4-fast-non-reasoning")
    assert route_for(agent_llm=name) == Route("grok", "grok-4-fast-non-reasoning")


def test_bare_provider_names_follow_their_model_settings(settings):
    settings.GEMINI_MODEL, settings.GROK_MODEL, settings.OPENROUTER_MODEL = "gemini-x", "grok-y", "mistral/z"
    assert [resolve(n).model for n in ("gemini", "grok", "openrouter")] == ["gemini-x", "grok-y", "mistral/z"]


def test_a_conversation_override_beats_the_agent_unless_it_is_none(settings):
    assert route_for(agent_llm="grok", conversation_llm="gpt-4o") == Route("openai", "gpt-4o")
    assert route_for(agent_llm="grok", conversation_llm="none").provider == "grok"


def test_an_unknown_name_and_an_empty_default_are_clear_errors(settings):
    with pytest.raises(UnknownModelError, match='LLM "llama-3" is not a known name'):
        resolve("llama-3")
    with pytest.raises(UnknownModelError, match='no model after "anthropic:"'):
        resolve("anthropic:")
    settings.DEFAULT_AGENT_LLM = "none"
    with pytest.raises(UnknownModelError, match="DEFAULT_AGENT_LLM is empty"):
        resolve("")
