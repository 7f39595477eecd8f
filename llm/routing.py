"""Which provider and model an LLM name means.

- `gemini` is `gemini-3-flash-preview`; any other `gemini-*` name is used as given.
- `grok` is `grok-4-fast-non-reasoning`; any other `grok-*` name is used as given.
- `openai:MODEL` and `openrouter:MODEL` go to those OpenAI-compatible endpoints.
- An empty name means DEFAULT_AGENT_LLM; a conversation's `llm_model` beats the agent's LLM.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


class UnknownModelError(ValueError):
    pass


@dataclass(frozen=True)
class Route:
    provider: str  # gemini | grok | openai | openrouter
    model: str


GEMINI_DEFAULT = "gemini-3-flash-preview"
GROK_DEFAULT = "grok-4-fast-non-reasoning"
PROVIDERS = ("gemini", "grok", "openai", "openrouter")


def resolve(name: str) -> Route:
    """Turn an LLM name into a route, or raise UnknownModelError naming the value and the fix."""
    raw = (name or "").strip()
    lowered = raw.lower()
    if lowered == "gemini":
        return Route("gemini", GEMINI_DEFAULT)
    if lowered.startswith("gemini-"):
        return Route("gemini", raw)
    if lowered == "grok":
        return Route("grok", GROK_DEFAULT)
    if lowered.startswith("grok-"):
        return Route("grok", raw)
    for prefix in ("openai", "openrouter"):
        if lowered.startswith(prefix + ":"):
            model = raw[len(prefix) + 1 :].strip()
            if not model:
                raise UnknownModelError(
                    f'LLM "{raw}": no model after "{prefix}:" (e.g. {prefix}:gpt-4o-mini)'
                )
            return Route(prefix, model)
    raise UnknownModelError(
        f'LLM "{raw}" is not a known name: use gemini, gemini-<model>, grok, grok-<model>, '
        "openai:<model> or openrouter:<model>"
    )


def route_for(*, agent_llm: str = "", conversation_llm: str = "") -> Route:
    """The route for one turn: the conversation override, else the agent's LLM, else the default."""
    return resolve(conversation_llm or agent_llm or settings.DEFAULT_AGENT_LLM)
