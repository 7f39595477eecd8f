"""The dashboard page. The sandbox chat lives in `dashboard/sandbox_views.py`."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from cindy_site.permissions import permission_by_method
from conversations.services.media_save import media_save_options
from conversations.services.summaries import conversations_summarize_now
from dashboard import selectors
from dashboard.access import verified_staff_required, viewer_agent_ids, visible_conversation_or_404
from dashboard.conversation_tools import conversation_header
from dashboard.costs import cost_chart
from engine.brakes import spend_alerts
from engine.health import process_alerts
from llm.conversation import conversation_history, history_start
from llm.costs import daily_costs
from llm.prompt import TurnContext, prompt_outline
from llm.prompt.instructions import turn_context_from_graph
from memory.services.stored import stored_entries
from memory.stored_kinds import StoreContext, stored_kinds


@verified_staff_required
def dashboard_index(request: HttpRequest) -> HttpResponse:
    # The page embeds its first state with json_script (escaped for HTML) and the browser renders
    # it with textContent; the socket then keeps it current.
    ids = viewer_agent_ids(request)
    initial = {
        "agents": selectors.agent_rows(agent_ids=ids),
        "usage": selectors.llm_usage_today(agent_ids=ids),
        "conversations": selectors.conversation_rows(agent_ids=ids),
        "events": selectors.recent_events(agent_ids=ids),
        "last_event_id": selectors.last_event_id(),
    }
    chart = cost_chart(daily_costs(agent_ids=ids))
    context = {"initial": initial, "chart": chart, "alerts": process_alerts() + spend_alerts()}
    if request.user.has_perm(selectors.BREAKERS_PERMISSION):
        # Rendered with the page (autoescaped); a reload shows the current states.
        context["breakers"] = selectors.route_breakers()
    return render(request, "dashboard/index.html", context)


@verified_staff_required
def conversation_seen(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The next planning request of the conversation as the prompt builder makes it
    (`llm.prompt.prompt_outline`): the system instruction's sections (instructions and role prompts,
    stickers, media library, channel details, curated memories, then the stored kinds' entries:
    memories, notes, plan, intentions, events, summaries), where the history starts and why, the
    history (headers, text, and media as their catalog descriptions), the entries stored since the
    history began, what the turn recalls (`# Recalled`), and the turn's final text (current time, the
    instructions for the turn)."""
    conversation = visible_conversation_or_404(request, conversation_id)
    start = history_start(conversation)
    history = conversation_history(conversation, start=start)
    # The latest turn's kind of instructions; a summarization turn's are written when it runs.
    graph = conversation.graphs.exclude(trigger="summarize").order_by("-created", "-id").first()
    turn = turn_context_from_graph(graph) if graph is not None else TurnContext(trigger="continuation")
    outline = prompt_outline(conversation, turn, history=history)
    store = StoreContext(
        agent_id=conversation.agent_id, channel_id=conversation.peer_id, topic_id=conversation.topic_id
    )
    summaries = stored_entries(kind="summarize", context=store)
    shown = {section.key for section in [*outline.system, *outline.recent]}
    empty = [
        spec.section_title
        for spec in stored_kinds()
        if spec.in_prompt and spec.kind != "summarize" and f"stored:{spec.kind}" not in shown
    ]
    context = conversation_header(conversation, request, tab="seen")
    return render(
        request,
        "dashboard/conversation.html",
        {
            **context,
            "outline": outline,
            "history": history,
            "summaries": summaries,
            "start": start,
            "empty_sections": empty,
            "turn_trigger": graph.get_trigger_display() if graph is not None else "",
            "save_options": media_save_options(
                conversation=conversation, parts=[p for m in history for p in m.media]
            ),
        },
    )


@verified_staff_required
@permission_by_method(read=None, write="conversations.change_conversation")
@require_POST
def conversation_summarize(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The page's "Summarize now" button: the same as the conversation admin's action."""
    conversation = visible_conversation_or_404(request, conversation_id)
    messages.info(request, conversations_summarize_now(conversations=[conversation]))
    return redirect("dashboard:conversation", conversation_id=conversation.pk)
