"""The agent's page (its conversations and a search of its past) and a conversation's search tab."""

from __future__ import annotations

from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from agents.access import agents_for
from conversations.models import Conversation
from dashboard.access import verified_staff_required, visible_conversation_or_404
from dashboard.conversation_tools import conversation_header
from dashboard.search import SEARCH_LIMIT, search_results

#: The agent's page lists this many of its conversations, the latest first.
CONVERSATIONS_SHOWN = 100


@require_GET
@verified_staff_required
def agent_page(request: HttpRequest, agent_id: int) -> HttpResponse:
    """One agent: its conversations, newest first, and a search of every one of them."""
    agent = get_object_or_404(agents_for(request.user), pk=agent_id)
    search = search_results(request, agent)
    chats = Conversation.objects.filter(agent=agent).select_related("agent")
    context = {
        "agent": agent,
        "search": search,
        "limit": SEARCH_LIMIT,
        "conversations": chats.order_by(F("last_message_at").desc(nulls_last=True), "-pk")[
            :CONVERSATIONS_SHOWN
        ],
        "conversation_count": chats.count(),
        "nav": "dashboard",
    }
    return render(request, "dashboard/agent.html", context, status=403 if search["refused"] else 200)


@require_GET
@verified_staff_required
def conversation_search(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """A search of what this conversation can recall: its own records and the agent's global ones."""
    conversation = visible_conversation_or_404(request, conversation_id)
    search = search_results(request, conversation.agent, conversation)
    context = {
        **conversation_header(conversation, request, tab="search"),
        "search": search,
        "limit": SEARCH_LIMIT,
    }
    return render(
        request, "dashboard/conversation_search.html", context, status=403 if search["refused"] else 200
    )
