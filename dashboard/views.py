"""The dashboard page. The sandbox chat lives in `dashboard/sandbox_views.py`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from conversations.models import Conversation
from dashboard import selectors
from dashboard.access import verified_staff_required
from dashboard.conversation_tools import conversation_header
from dashboard.costs import cost_chart, daily_costs
from llm.conversation import conversation_history


@verified_staff_required
def dashboard_index(request: HttpRequest) -> HttpResponse:
    # The page embeds its first state with json_script (escaped for HTML) and the browser renders
    # it with textContent; the socket then keeps it current.
    initial = {
        "agents": selectors.agent_rows(),
        "usage": selectors.llm_usage_today(),
        "conversations": selectors.conversation_rows(),
        "events": selectors.recent_events(),
        "last_event_id": selectors.last_event_id(),
    }
    chart = cost_chart(daily_costs())
    return render(request, "dashboard/index.html", {"initial": initial, "chart": chart})


@verified_staff_required
def conversation_seen(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The conversation exactly as the agent's prompt renders it (`llm.conversation`): headers,
    text, and media as their catalog descriptions, capped at the prompt's history size."""
    conversation = get_object_or_404(Conversation.objects.select_related("agent"), pk=conversation_id)
    history = conversation_history(conversation)
    context = conversation_header(conversation, request, tab="seen")
    return render(request, "dashboard/conversation.html", {**context, "history": history})
