from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    # admin.site is cindy_site.admin_site.CindyAdminSite (OTP required), see CindyAdminConfig.
    path("admin/", admin.site.urls),
    path("dashboard/", include("dashboard.urls")),
]

if settings.DEBUG:
    from django.conf.urls.static import static

    urlpatterns += static(settings.MEDIA_URL, document_root=settings.MEDIA_ROOT)
