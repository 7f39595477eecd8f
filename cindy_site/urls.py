from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    # admin.site is cindy_site.admin_site.CindyAdminSite (OTP required), see CindyAdminConfig.
    path("admin/", admin.site.urls),
    path("dashboard/", include("dashboard.urls")),
]
# MEDIA_ROOT is never served as a whole: media files go out only through views that require a
# verified staff session (the admin's file views, the sandbox chat's photo view).
