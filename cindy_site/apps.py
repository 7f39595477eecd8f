from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.contrib.admin import apps as admin_apps


class CindySiteConfig(AppConfig):
    name = "cindy_site"
    verbose_name = "Cindy"

    def ready(self) -> None:
        from cindy_site import checks  # noqa: F401  (registers the system checks)


class CindyAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with the OTP-protected site as `admin.site`."""

    default = False  # named explicitly in INSTALLED_APPS

    default_site = "cindy_site.admin_site.CindyAdminSite"

    def ready(self) -> None:
        if settings.LEAN_PROCESS:
            # The gateway and the task workers never serve the admin: its modules (and what they
            # import, such as httpx for the model lists) stay out of their memory.
            admin_apps.SimpleAdminConfig.ready(self)
        else:
            super().ready()
