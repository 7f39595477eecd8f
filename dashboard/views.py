"""The dashboard page. The sandbox chat lives in `dashboard/sandbox_views.py`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard import selectors
from dashboard.access import verified_staff_required


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
    return render(request, "dashboard/index.html", {"initial": initial})
