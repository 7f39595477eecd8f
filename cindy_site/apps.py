from __future__ import annotations

from django.apps import AppConfig


class CindySiteConfig(AppConfig):
    name = "cindy_site"
    verbose_name = "Cindy"

    def ready(self) -> None:
        from cindy_site import checks  # noqa: F401  (registers the system checks)
