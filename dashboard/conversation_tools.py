"""Reads for a conversation page's header: its controls, its pending work and the LLM choices."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from cindy_site.parameters import parameters_installed
from conversations.models import Conversation, NodeStatus, TaskGraph
from dashboard.transcript import action_text
from llm.choices import llm_choices
from llm.parameter_store import parameters_refresh
from llm.routing import UnknownModelError, is_default_name, route_for
from llm.translation import LANGUAGES
from recall.selectors import MAX_QUERY_CHARS


def effective_llm(conversation: Conversation) -> dict[str, str]:
    """Which model the next turn uses and why, or the error that stops it."""
    if not is_default_name(conversation.llm_model):
        source = "this conversation"
    elif not is_default_name(conversation.agent.llm):
        source = "the agent"
    else:
        source = (
            "the site default (DEFAULT_AGENT_LLM, set in the admin)"
            if "DEFAULT_AGENT_LLM" in parameters_installed()
            else "the site default (DEFAULT_AGENT_LLM)"
        )
    try:
        route = route_for(agent_llm=conversation.agent.llm, conversation_llm=conversation.llm_model)
    except UnknownModelError as exc:
        return {"route": "", "source": source, "error": str(exc)}
    return {"route": f"{route.provider}/{route.model}", "source": source, "error": ""}


def pending_work(conversation: Conversation) -> dict[str, Any] | None:
    graph = TaskGraph.objects.filter(active_slot=conversation.pk).prefetch_related("nodes").first()
    if graph is None:
        return None
    return {
        "id": graph.pk,
        "trigger": graph.get_trigger_display() or "turn",
        "nodes": [
            {
                "id": node.pk,
                "kind": node.kind,
                "status": node.status,
                "text": action_text(node),
                "not_before": node.not_before,
                "cancellable": node.status == NodeStatus.PENDING,
            }
            for node in graph.nodes.all()
            if node.status in (NodeStatus.PENDING, NodeStatus.RUNNING)
        ],
    }


def operator_language(request: HttpRequest) -> str:
    """The first offered language in the browser's Accept-Language, else English."""
    from django.utils.translation import get_language_info

    for item in request.headers.get("Accept-Language", "").split(","):
        code = item.split(";")[0].strip().split("-")[0].lower()
        if not code:
            continue
        try:
            name = get_language_info(code)["name"]
        except KeyError:
            continue
        if name in LANGUAGES:
            return name
    return "English"


def conversation_header(conversation: Conversation, request: HttpRequest, *, tab: str) -> dict[str, Any]:
    parameters_refresh()  # the default LLM shown is the one the next turn uses (an admin override included)
    return {
        "conversation": conversation,
        "tab": tab,
        "llm": effective_llm(conversation),
        "llm_choices": llm_choices(),
        "work": pending_work(conversation),
        "languages": LANGUAGES,
        "language": request.GET.get("lang") or operator_language(request),
        "nav": "dashboard",
        "search_max_chars": MAX_QUERY_CHARS,
    }
