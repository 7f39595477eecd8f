from __future__ import annotations

import sys

from django.apps import AppConfig


def preload_task_modules() -> None:
    """Import the LLM stack (prompt, planning, the default route's SDK) now: 1-3 s a first task pays.

    Called in the `qcluster` process before it forks its workers, so every worker starts with the
    modules loaded (and a recycled worker, forked again, too).
    """
    import importlib

    import engine.tasks  # noqa: F401
    import llm.planning  # noqa: F401
    from llm.providers import provider_module_for
    from llm.routing import route_for

    try:
        provider = route_for().provider
    except Exception:  # a bad DEFAULT_AGENT_LLM is reported by the first task that needs it
        return
    importlib.import_module(provider_module_for(provider))


class EngineConfig(AppConfig):
    """The gateway and its task workers; installed for the `runagents` command. It has no models."""

    name = "engine"
    verbose_name = "Engine"

    def ready(self) -> None:
        if sys.argv[1:2] == ["qcluster"]:
            preload_task_modules()
