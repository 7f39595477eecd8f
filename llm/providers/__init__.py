"""Provider lookup: a route's provider name → a configured provider on its real SDK.

Each SDK is imported on first use of its provider (google-genai costs about 27 MiB of a worker's
memory, openai about 13 MiB): a deployment on one provider never loads the others.
"""

from __future__ import annotations

from django.conf import settings

from cindy_site.llm_endpoints import endpoint_lookup, endpoint_variable
from llm.errors import LLMConfigError
from llm.providers.base import Provider

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def provider_for(name: str) -> Provider:
    """The provider for `name` (gemini, grok, openai, openrouter, anthropic, or an endpoint of
    CINDY_LLM_ENDPOINTS or the admin's table), keys and endpoints from settings and that table."""
    timeout = settings.LLM_TIMEOUT_SECONDS
    if name == "anthropic":
        from llm.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            api_key=settings.ANTHROPIC_API_KEY,
            base_url=settings.ANTHROPIC_BASE_URL,
            timeout=timeout,
            max_tokens=settings.ANTHROPIC_MAX_TOKENS,
        )
    if name == "gemini":
        from llm.providers.gemini import GeminiProvider

        return GeminiProvider(
            api_key=settings.GOOGLE_GEMINI_API_KEY, base_url=settings.GEMINI_BASE_URL, timeout=timeout
        )
    compatible = {
        "grok": ("GROK_API_KEY", settings.GROK_BASE_URL or "https://api.x.ai/v1"),
        "openai": ("OPENAI_API_KEY", settings.OPENAI_BASE_URL or OPENAI_DEFAULT_BASE_URL),
        "openrouter": ("OPENROUTER_API_KEY", settings.OPENROUTER_BASE_URL),
    }
    from llm.providers.openai_compat import OpenAICompatibleProvider

    endpoint = endpoint_lookup(name)
    if endpoint is not None:
        key_variable = (
            endpoint_variable(name, "KEY")
            if endpoint.source == "setting"
            else f'the API key of the LLM endpoint "{name}" in the admin'
        )
        # A self-hosted server (Ollama, vLLM, llama.cpp, LM Studio) usually wants no key, but the SDK
        # refuses to build a client without one: any value does, and it is sent only to that server.
        return OpenAICompatibleProvider(
            name=name,
            key_variable=key_variable,
            api_key=endpoint.api_key or "unused",
            base_url=endpoint.base_url,
            timeout=timeout,
            structured=endpoint.structured,
            structured_variable=(
                endpoint_variable(name, "STRUCTURED")
                if endpoint.source == "setting"
                else f'the structured output of the LLM endpoint "{name}" in the admin'
            ),
        )
    if name not in compatible:
        raise LLMConfigError(
            f'provider "{name}" is unknown: use gemini, grok, openai, openrouter or anthropic, or an '
            "endpoint named in CINDY_LLM_ENDPOINTS or the admin's LLM endpoints"
        )
    key_variable, base_url = compatible[name]
    return OpenAICompatibleProvider(
        name=name,
        key_variable=key_variable,
        api_key=getattr(settings, key_variable),
        base_url=base_url,
        timeout=timeout,
    )


def provider_module_for(name: str) -> str:
    """The module that implements provider `name` (what a worker preloads for its default route)."""
    if name in ("gemini", "anthropic"):
        return f"llm.providers.{name}"
    return "llm.providers.openai_compat"


__all__ = ["Provider", "provider_for", "provider_module_for"]
