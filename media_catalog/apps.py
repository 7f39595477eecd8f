from __future__ import annotations

from django.apps import AppConfig


class MediaCatalogConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "media_catalog"
    verbose_name = "Media catalog"

    def ready(self) -> None:
        from agents.admin_parts import LIBRARY_PICTURES, STICKER_SETS, choices_provide
        from media_catalog.selectors import library_picture_choices, sticker_set_choices

        # The agent form offers the sets the catalog knows, and the account page the library's
        # pictures as profile photos (agents/admin_parts.py).
        choices_provide(STICKER_SETS, sticker_set_choices)
        choices_provide(LIBRARY_PICTURES, library_picture_choices)
