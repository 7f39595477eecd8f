from __future__ import annotations

from django.apps import AppConfig


class EngineConfig(AppConfig):
    """The gateway and its task workers; installed for the `runagents` command. It has no models."""

    name = "engine"
    verbose_name = "Engine"
