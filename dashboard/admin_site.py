"""The staff console: Django's admin behind a one-time password.

`CindyAdminSite` is installed as Django's default admin site (see `CindyAdminConfig` in
`cindy_site/apps.py`), so every `@admin.register` in the project and in third-party apps lands on
it, and only users verified by an OTP device get in. It adds the device enrollment pages, narrows
every agent-scoped model's pages to the agents the user may see (`agents.admin_scope`), and lists the
models on its index in groups by task, the internal ones for owners only (`dashboard.admin_groups`).
"""

from __future__ import annotations

from django.urls import path
from django_otp.admin import OTPAdminSite

from dashboard.login_form import CindyLoginForm


class CindyAdminSite(OTPAdminSite):
    site_header = "Cindy console"
    site_title = "Cindy"
    index_title = "Agents, conversations and curation"
    site_url = "/dashboard/"  # "View site" leads to the live dashboard
    # The navigation column took a quarter of a 1280 px window, which left changelists with a filter
    # column too narrow for their columns; the index and the breadcrumbs lead everywhere it did.
    enable_nav_sidebar = False
    login_template = "admin/cindy_login.html"
    login_form = CindyLoginForm  # one submit signs in a user with one device (dashboard/login_form.py)

    def __init__(self, name: str = "admin") -> None:
        # Named "admin" so that reverse("admin:...") and LOGIN_URL keep working.
        super().__init__(name)

    def login(self, request, extra_context=None):
        """The password + code form, and "Sign in with Google" when it is configured."""
        from django.conf import settings
        from django.urls import reverse

        extra_context = dict(extra_context or {})
        if settings.GOOGLE_SIGNIN_ENABLED:
            extra_context["google_signin_url"] = reverse("openid_connect_login", args=["google"])
        return super().login(request, extra_context)

    def get_app_list(self, request, app_label=None):
        """The index's models in groups by task, the engine's internals for owners only
        (`dashboard/admin_groups.py`)."""
        from agents.access import is_owner
        from dashboard.admin_groups import admin_app_list

        app_list = super().get_app_list(request, app_label)
        return admin_app_list(app_list, owner=is_owner(request.user), app_label=app_label)

    def register(self, model_or_iterable, admin_class=None, **options):
        """Every agent-scoped model's admin shows only the agents the user may see (admin_scope)."""
        from django.db.models import Model

        from agents.admin_scope import scoped_admin_class

        single = isinstance(model_or_iterable, type) and issubclass(model_or_iterable, Model)
        models = [model_or_iterable] if single else list(model_or_iterable)
        for model in models:
            super().register(model, scoped_admin_class(model, admin_class), **options)

    def get_urls(self):
        from conversations import admin_media_files as media_files
        from dashboard import otp_views

        extra = [
            path("otp/", self.admin_view(otp_views.devices), name="otp_devices"),
            path("otp/totp/", self.admin_view(otp_views.enroll_totp), name="otp_enroll_totp"),
            path("otp/static/", self.admin_view(otp_views.static_codes), name="otp_static_codes"),
            path("otp/telegram/", self.admin_view(otp_views.enroll_telegram), name="otp_enroll_telegram"),
            path(
                "media-files/",
                self.admin_view(lambda request: media_files.unused_files_view(self, request)),
                name="media_files_unused",
            ),
            path(
                "media-files/description/<int:pk>/",
                self.admin_view(lambda request, pk: media_files.description_file_download(self, request, pk)),
                name="media_files_description",
            ),
            path(
                "media-files/download/",
                self.admin_view(lambda request: media_files.unused_file_download(self, request)),
                name="media_files_download",
            ),
        ]
        return extra + super().get_urls()
