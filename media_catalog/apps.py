from __future__ import annotations

from django.apps import AppConfig


class MediaCatalogConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "media_catalog"
    verbose_name = "Media catalog"

    def ready(self) -> None:
        from agents.admin_parts import STICKER_SETS, choices_provide
        from media_catalog.selectors import sticker_set_choices

        # The agent form offers the sets the catalog knows (agents/admin_parts.py).
        choices_provide(STICKER_SETS, sticker_set_choices)
