"""The web process's health endpoints, for a load balancer or supervisor (no login, plain text).

`/health/live`: the process answers requests. `/health/ready`: it can also serve them: the database
answers, and Redis (the channel layer) when REDIS_URL is set. The state of the gateways and task
workers is `manage.py health` (engine/health.py).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from engine.health import database_problem, redis_problem


@never_cache
@require_GET
def health_live(request: HttpRequest) -> HttpResponse:
    return HttpResponse("live\n", content_type="text/plain")


@never_cache
@require_GET
def health_ready(request: HttpRequest) -> HttpResponse:
    problems = [p for p in (database_problem(), redis_problem()) if p]
    if problems:
        return HttpResponse(
            "".join(f"not ready: {p}\n" for p in problems), status=503, content_type="text/plain"
        )
    return HttpResponse("ready\n", content_type="text/plain")
