"""`/metrics`: the Prometheus exposition of the whole installation (engine/metrics.py).

Scrapers send `Authorization: Bearer <CINDY_METRICS_TOKEN>`; staff signed in with their one-time
code may read it in the browser. Anyone else gets 401 (no or a wrong token) without a hint of what
is there. With CINDY_METRICS_TOKEN empty, only staff can read it.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from dashboard.access import request_user_is_verified
from engine.metrics import DatabaseCollector


def _bearer_ok(request: HttpRequest) -> bool:
    token = settings.CINDY_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not (_bearer_ok(request) or request_user_is_verified(request)):
        response = HttpResponse(
            "a bearer token (CINDY_METRICS_TOKEN) or a staff sign-in is needed\n", status=401
        )
        response["WWW-Authenticate"] = 'Bearer realm="cindy metrics"'
        return response
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
