from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from api.api import api as rest_api
from dashboard.health_views import health_live, health_ready
from dashboard.metrics_views import metrics

urlpatterns = [
    # The site's front door is the dashboard (which sends a visitor who is not signed in to the login).
    path("", RedirectView.as_view(pattern_name="dashboard:index"), name="home"),
    # Browsers ask for /favicon.ico whatever the page says; the icon lives with the static files.
    path("favicon.ico", RedirectView.as_view(url=static("cindy/favicon.ico"), permanent=True)),
    # admin.site is dashboard.admin_site.CindyAdminSite (OTP required), see CindyAdminConfig.
    path("admin/", admin.site.urls),
    path("dashboard/", include("dashboard.urls")),
    # The REST API (api/): bearer tokens only, its schema at /api/v1/openapi.json.
    path("api/v1/", rest_api.urls),
    # For supervisors and load balancers: no login, and answered on plain http too (settings).
    path("health/live", health_live, name="health_live"),
    path("health/ready", health_ready, name="health_ready"),
    # Prometheus: a bearer token (CINDY_METRICS_TOKEN) or a verified staff session.
    path("metrics", metrics, name="metrics"),
]
if settings.GOOGLE_SIGNIN_ENABLED:
    # Sign-in with Google, then the one-time code (dashboard/signin_views.py). Absent when not configured.
    urlpatterns.append(path("accounts/", include("dashboard.signin_views")))
# MEDIA_ROOT is never served as a whole: media files go out only through views that require a
# verified staff session (the admin's file views, the sandbox chat's photo view).
