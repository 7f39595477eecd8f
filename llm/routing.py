"""Which route one turn takes: the conversation's LLM beats the agent's, which beats DEFAULT_AGENT_LLM.

What a name means (`resolve`) is parsed in `cindy_site/llm_names.py`, below every app, so that the
apps under `llm` validate names without importing it; its names are re-exported here for `llm`'s
own modules.
"""

from __future__ import annotations

from cindy_site.llm_names import (
    EMPTY_NAMES,
    GEMINI_DEFAULT,
    GROK_DEFAULT,
    OPENAI_DEFAULT,
    OPENROUTER_DEFAULT,
    PROVIDERS,
    Route,
    UnknownModelError,
    is_default_name,
    resolve,
)
from cindy_site.parameters import parameter

__all__ = [
    "EMPTY_NAMES",
    "GEMINI_DEFAULT",
    "GROK_DEFAULT",
    "OPENAI_DEFAULT",
    "OPENROUTER_DEFAULT",
    "PROVIDERS",
    "Route",
    "UnknownModelError",
    "is_default_name",
    "resolve",
    "route_for",
]


def route_for(*, agent_llm: str = "", conversation_llm: str = "") -> Route:
    """The route for one turn: the conversation override, else the agent's LLM, else the default."""
    for name in (conversation_llm, agent_llm):
        if not is_default_name(name):
            return resolve(name)
    return resolve(parameter("DEFAULT_AGENT_LLM"))
