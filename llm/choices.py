"""The LLM names the agent form and the conversation page suggest (any name that routes is accepted)."""

from __future__ import annotations

from llm.models import OfferedModel
from llm.routing import ANTHROPIC_DEFAULT, GEMINI_DEFAULT, GROK_DEFAULT

#: Names offered in the LLM field besides OpenRouter's list (any valid name is accepted).
BUILT_IN_LLMS = (
    "gemini",
    GEMINI_DEFAULT,
    "gemini-2.5-flash",
    "gemini-2.5-pro",
    "grok",
    GROK_DEFAULT,
    "gpt",
    "claude",
    ANTHROPIC_DEFAULT,
    "claude-haiku-4-5",
    "openrouter",
)


def llm_choices() -> list[str]:
    """The models offered to personas first (in the operator's order), the built-in names, then the rest
    of the list (OpenRouter's fetched models)."""
    rows = OfferedModel.objects.order_by("-offered", "position", "provider", "model").only(
        "provider", "model", "llm_name", "offered"
    )
    offered = [row.persona_name for row in rows if row.offered]
    rest = [row.persona_name for row in rows if not row.offered]
    names = [*offered, *BUILT_IN_LLMS, *rest]
    return list(dict.fromkeys(names))
