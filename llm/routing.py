"""Which route one turn takes: the conversation's LLM beats the agent's, which beats DEFAULT_AGENT_LLM.

What a name means (`resolve`) is parsed in `cindy_site/llm_names.py`, below every app, so that the
apps under `llm` validate names without importing it; its names are re-exported here for `llm`'s
own modules.
"""

from __future__ import annotations

from django.conf import settings

from cindy_site.llm_names import (
    ANTHROPIC_DEFAULT,
    EMPTY_NAMES,
    GEMINI_DEFAULT,
    GROK_DEFAULT,
    OPENAI_DEFAULT,
    OPENROUTER_DEFAULT,
    PROVIDERS,
    Route,
    UnknownModelError,
    endpoint_names,
    is_default_name,
    resolve,
)
from cindy_site.parameters import parameter

__all__ = [
    "ANTHROPIC_DEFAULT",
    "EMPTY_NAMES",
    "GEMINI_DEFAULT",
    "GROK_DEFAULT",
    "OPENAI_DEFAULT",
    "OPENROUTER_DEFAULT",
    "PROVIDERS",
    "Route",
    "UnknownModelError",
    "endpoint_names",
    "is_default_name",
    "resolve",
    "route_for",
    "routes_for",
]


def route_for(*, agent_llm: str = "", conversation_llm: str = "") -> Route:
    """The route for one turn: the conversation override, else the agent's LLM, else the default."""
    for name in (conversation_llm, agent_llm):
        if not is_default_name(name):
            return resolve(name)
    return resolve(parameter("DEFAULT_AGENT_LLM"))


def routes_for(
    *, agent_llm: str = "", conversation_llm: str = "", agent_fallback: list[str] | None = None
) -> list[Route]:
    """The routes one turn may take, in order: `route_for`'s, then the fallback chain, the agent's
    "# LLM Fallback" names or else CINDY_LLM_FALLBACK. A conversation's override replaces only the
    first route: the chain stays. A route already in the list is not tried twice.

    The first route's name is checked (UnknownModelError); a bad fallback name cannot stop a turn, so
    it is left out here (the persona import and the system checks name it).
    """
    routes = [route_for(agent_llm=agent_llm, conversation_llm=conversation_llm)]
    names = [n for n in agent_fallback or [] if isinstance(n, str) and not is_default_name(n)]
    for name in names or fallback_names():
        try:
            route = resolve(name)
        except UnknownModelError:
            continue
        if route not in routes:
            routes.append(route)
    return routes


def fallback_names() -> list[str]:
    """CINDY_LLM_FALLBACK: the chain of agents whose persona lists none."""
    return [n.strip() for n in getattr(settings, "CINDY_LLM_FALLBACK", []) if n.strip()]
