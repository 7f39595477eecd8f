from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.contrib.admin import apps as admin_apps


class CindySiteConfig(AppConfig):
    # This module holds several configs: without `default`, "cindy_site" in INSTALLED_APPS would get
    # a plain AppConfig and `ready()` would never run.
    default = True
    name = "cindy_site"
    verbose_name = "Cindy"

    def ready(self) -> None:
        from cindy_site import checks, lookups  # noqa: F401  (checks: registers the system checks)

        lookups.register()


class CindyAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with the OTP-protected site as `admin.site`."""

    default = False  # named explicitly in INSTALLED_APPS

    default_site = "dashboard.admin_site.CindyAdminSite"

    def ready(self) -> None:
        if settings.LEAN_PROCESS:
            # The gateway and the task workers never serve the admin: its modules (and what they
            # import, such as httpx for the model lists) stay out of their memory.
            admin_apps.SimpleAdminConfig.ready(self)
        else:
            super().ready()


class OTPTOTPConfig(AppConfig):
    """django-otp's authenticator-app devices, under a name operators read (not "OTP_TOTP")."""

    name = "django_otp.plugins.otp_totp"
    label = "otp_totp"
    default_auto_field = "django.db.models.AutoField"
    verbose_name = "Sign-in: authenticator apps"


class OTPStaticConfig(AppConfig):
    """django-otp's backup codes, under a name operators read (not "OTP_STATIC")."""

    name = "django_otp.plugins.otp_static"
    label = "otp_static"
    default_auto_field = "django.db.models.AutoField"
    verbose_name = "Sign-in: backup codes"
