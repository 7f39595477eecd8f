"""Dashboard pages across agents: the users (partners) list and one partner's page."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.access import verified_staff_required, viewer_agent_ids
from dashboard.partners import PARTNER_LIMIT, partner_detail, partner_rows


@verified_staff_required
def users_index(request: HttpRequest) -> HttpResponse:
    rows = partner_rows(agent_ids=viewer_agent_ids(request))
    return render(request, "dashboard/users.html", {"partners": rows, "limit": PARTNER_LIMIT, "nav": "users"})


@verified_staff_required
def user_detail(request: HttpRequest, peer_id: int) -> HttpResponse:
    partner = partner_detail(peer_id=peer_id, agent_ids=viewer_agent_ids(request))
    if partner is None:
        raise Http404(f"no agent has a direct conversation with user {peer_id}")
    return render(request, "dashboard/user.html", {"partner": partner, "nav": "users"})
