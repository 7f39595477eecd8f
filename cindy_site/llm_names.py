"""Which provider and model an LLM name means (parsing only: no provider code, so every app can
validate a name). The names are those of cw-telegram-agent's `LLM` field.

- An empty name, `none` or `null` means DEFAULT_AGENT_LLM.
- `gemini` is GEMINI_MODEL (default `gemini-3-flash-preview`); any other name starting with `gemini`
  (`gemini-2.5-flash`) is that Gemini model.
- `grok` is GROK_MODEL (default `grok-4-fast-non-reasoning`); any other `grok…` name is that model.
- `gpt` and `openai` are `gpt-5-mini` on OpenAI; any other name starting with `gpt` or `openai`
  (`gpt-5-mini`, `gpt-4o`) is that OpenAI model.
- A name with a `/` (`anthropic/claude-sonnet-4.5`, `google/gemini-2.5-flash`) is an OpenRouter model
  (Claude through OpenRouter, as before Anthropic had a provider of its own);
  `openrouter` alone is OPENROUTER_MODEL (default `openrouter/auto`, OpenRouter's own router).
- `claude` and `anthropic` are `claude-sonnet-4-6` on Anthropic's Messages API; any other name starting
  with `claude` (`claude-haiku-4-5`, `claude-opus-4-1-20250805`) is that Anthropic model.
- `openai:MODEL`, `openrouter:MODEL` and `anthropic:MODEL` name a model on that endpoint explicitly.
- `NAME:MODEL` (`ollama:llama3.1`), where NAME is an endpoint of CINDY_LLM_ENDPOINTS or of the admin's
  table (`cindy_site/llm_endpoints.py`), is that model on that OpenAI-compatible endpoint (a
  self-hosted server, or any other compatible API).

Which name a turn uses (conversation, agent, default) is `llm.routing.route_for`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from cindy_site.llm_endpoints import endpoint_lookup, endpoints
from cindy_site.parameters import parameter


class UnknownModelError(ValueError):
    pass


@dataclass(frozen=True)
class Route:
    provider: str  # gemini | grok | openai | openrouter | anthropic | a CINDY_LLM_ENDPOINTS name
    model: str


GEMINI_DEFAULT = "gemini-3-flash-preview"
GROK_DEFAULT = "grok-4-fast-non-reasoning"
OPENAI_DEFAULT = "gpt-5-mini"
OPENROUTER_DEFAULT = "openrouter/auto"
ANTHROPIC_DEFAULT = "claude-sonnet-4-6"
PROVIDERS = ("gemini", "grok", "openai", "openrouter", "anthropic")
EMPTY_NAMES = ("", "none", "null")


def endpoint_names() -> tuple[str, ...]:
    """The names of the OpenAI-compatible endpoints (`ollama`, `vllm`...): CINDY_LLM_ENDPOINTS and the
    admin's table."""
    return tuple(endpoints())


def is_default_name(name: str | None) -> bool:
    """True for the values that mean "use DEFAULT_AGENT_LLM": empty, `none`, `null`."""
    return (name or "").strip().lower() in EMPTY_NAMES


def resolve(name: str | None) -> Route:
    """Turn an LLM name into a route, or raise UnknownModelError naming the value and the fix."""
    if is_default_name(name):
        default = parameter("DEFAULT_AGENT_LLM")
        if is_default_name(default):
            raise UnknownModelError(
                'DEFAULT_AGENT_LLM is empty: set it to an LLM name such as "gemini", "grok" or "gpt"'
            )
        return resolve(default)
    raw = (name or "").strip()
    lowered = raw.lower()
    for prefix in ("openai", "openrouter", "anthropic"):
        if lowered.startswith(prefix + ":"):
            model = raw[len(prefix) + 1 :].strip()
            if not model:
                raise UnknownModelError(
                    f'LLM "{raw}": no model after "{prefix}:" (e.g. {prefix}:gpt-4o-mini)'
                )
            return Route(prefix, model)
    label, sep, model = raw.partition(":")
    if sep and endpoint_lookup(label.strip().lower()) is not None:
        if not model.strip():
            raise UnknownModelError(f'LLM "{raw}": no model after "{label}:" (e.g. {label}:llama3.1)')
        return Route(label.strip().lower(), model.strip())
    if "/" in raw:
        return Route("openrouter", raw)
    if lowered == "openrouter":
        return Route("openrouter", getattr(settings, "OPENROUTER_MODEL", "") or OPENROUTER_DEFAULT)
    if lowered == "gemini":
        return Route("gemini", getattr(settings, "GEMINI_MODEL", "") or GEMINI_DEFAULT)
    if lowered.startswith("gemini"):
        return Route("gemini", raw)
    if lowered == "grok":
        return Route("grok", getattr(settings, "GROK_MODEL", "") or GROK_DEFAULT)
    if lowered.startswith("grok"):
        return Route("grok", raw)
    if lowered in ("gpt", "openai"):
        return Route("openai", OPENAI_DEFAULT)
    if lowered.startswith(("gpt", "openai")):
        return Route("openai", raw)
    if lowered in ("claude", "anthropic"):
        return Route("anthropic", ANTHROPIC_DEFAULT)
    if lowered.startswith("claude"):
        return Route("anthropic", raw)
    raise UnknownModelError(
        f'LLM "{raw}" is not a known name: use gemini, grok, gpt, openai, claude or openrouter, a model '
        "name starting with one of those (gemini-2.5-flash, gpt-5-mini, claude-haiku-4-5), an OpenRouter "
        "name such as "
        "anthropic/claude-sonnet-4.5, NAME:MODEL for an endpoint of CINDY_LLM_ENDPOINTS or the admin's LLM "
        "endpoints "
        "(ollama:llama3.1), or leave it empty for DEFAULT_AGENT_LLM"
    )
