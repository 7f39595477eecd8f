from __future__ import annotations

from django.apps import AppConfig


class CwimportConfig(AppConfig):
    name = "cwimport"
    verbose_name = "Import from cw-telegram-agent"
