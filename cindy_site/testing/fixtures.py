"""Pytest fixtures for the LLM seam: a FakeLLMServer with every provider pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cindy_site.testing.fake_llm import FakeLLMServer


@pytest.fixture
def fake_llm(settings) -> Iterator[FakeLLMServer]:
    """A running FakeLLMServer; Gemini, Grok, OpenAI, OpenRouter and Anthropic settings point at it with
    test keys."""
    server = FakeLLMServer().start()
    settings.GEMINI_BASE_URL = server.url
    settings.GROK_BASE_URL = server.url + "/v1"
    settings.OPENAI_BASE_URL = server.url + "/v1"
    settings.OPENROUTER_BASE_URL = server.url + "/v1"
    settings.GOOGLE_GEMINI_API_KEY = "test"
    settings.GROK_API_KEY = "test"
    settings.OPENAI_API_KEY = "test"
    settings.OPENROUTER_API_KEY = "test"
    settings.ANTHROPIC_BASE_URL = server.url
    settings.ANTHROPIC_API_KEY = "test"
    settings.DEFAULT_AGENT_LLM = "gemini"
    try:
        yield server
    finally:
        server.stop()
