"""The dashboard page. The sandbox chat lives in `dashboard/sandbox_views.py`."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from cindy_site.permissions import permission_by_method
from conversations.models import Conversation
from conversations.services.summaries import conversations_summarize_now
from dashboard import selectors
from dashboard.access import verified_staff_required
from dashboard.conversation_tools import conversation_header
from dashboard.costs import cost_chart, daily_costs
from llm.conversation import conversation_history, history_start
from memory.services.stored import stored_entries
from memory.stored_kinds import StoreContext


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
    """The conversation exactly as the agent's prompt renders it (`llm.conversation`): its summaries,
    where the history starts and why, then the history (headers, text, and media as their catalog
    descriptions), capped at the prompt's history size."""
    conversation = get_object_or_404(Conversation.objects.select_related("agent"), pk=conversation_id)
    start = history_start(conversation)
    history = conversation_history(conversation, start=start)
    store = StoreContext(agent_id=conversation.agent_id, channel_id=conversation.peer_id)
    summaries = stored_entries(kind="summarize", context=store)
    context = conversation_header(conversation, request, tab="seen")
    return render(
        request,
        "dashboard/conversation.html",
        {**context, "history": history, "summaries": summaries, "start": start},
    )


@verified_staff_required
@permission_by_method(read=None, write="conversations.change_conversation")
@require_POST
def conversation_summarize(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The page's "Summarize now" button: the same as the conversation admin's action."""
    conversation = get_object_or_404(Conversation.objects.select_related("agent"), pk=conversation_id)
    messages.info(request, conversations_summarize_now(conversations=[conversation]))
    return redirect("dashboard:conversation", conversation_id=conversation.pk)
