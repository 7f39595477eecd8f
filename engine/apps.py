from __future__ import annotations

import importlib
import logging
import sys

from django.apps import AppConfig
from django.conf import settings

logger = logging.getLogger("engine.workers")

#: What every planning task imports, whatever its provider.
TASK_MODULES = ("engine.tasks", "llm.planning")


def task_providers(*, read_agents: bool = True) -> set[str]:
    """The LLM providers this deployment's planning uses: the default route's, CINDY_LLM_FALLBACK's
    and (`read_agents`) each enabled agent's, its `# LLM Fallback` routes included. A fallback is
    loaded too because it answers when a provider is away: its first turn is late already, and a cold
    SDK would add its import (a second or more) to every worker's first fallback.

    A conversation's own LLM override is not read: its provider loads on the first turn that needs it.
    A bad LLM name is skipped here; the first task that needs it reports it.
    """
    from django.db import DatabaseError

    from agents.models import Agent
    from llm.routing import UnknownModelError, fallback_names, resolve

    names = {"", *fallback_names()}  # the default route and the site's fallback chain
    if read_agents:
        try:
            rows = Agent.objects.filter(disabled=False).values_list("llm", "llm_fallback").distinct()
            for llm, fallback in rows:
                names.add(llm)
                names.update(n for n in fallback or [] if isinstance(n, str))
        except DatabaseError:  # the database being away must not stop the workers from starting
            logger.warning("could not read the agents' LLMs; preloading the default route's provider only")
    providers = set()
    for name in names:
        try:
            providers.add(resolve(name).provider)
        except UnknownModelError:
            continue
    return providers


def preload_task_modules(*, read_agents: bool = True) -> list[str]:
    """Load the LLM stack planning needs now: the planning modules, and for each provider in use its
    SDK and its client (built once per process: CA certificates, the SDK's lazily loaded parts, the
    models' validators). Returns the provider modules loaded.

    Called in the task pool's process before it forks its workers (`runworkers`, and django-q2's own
    `qcluster`), so every worker starts with all of it loaded, and a recycled worker, forked again,
    too: otherwise each worker's first task pays them (0.4 s or more). Only the providers in use are
    loaded: google-genai costs about 25 MiB of a worker's memory, openai about 13 MiB.
    """
    from llm.errors import LLMConfigError
    from llm.providers import provider_for, provider_module_for

    for name in TASK_MODULES:
        importlib.import_module(name)
    providers = task_providers(read_agents=read_agents)
    for provider in sorted(providers):
        importlib.import_module(provider_module_for(provider))
        try:
            provider_for(provider)  # builds the client the worker's calls reuse
        except LLMConfigError:  # no key yet: the first task that needs it reports it
            continue
    return sorted({provider_module_for(p) for p in providers})


class EngineConfig(AppConfig):
    """The gateway and its task workers; installed for the `runagents` command. It has no models."""

    name = "engine"
    verbose_name = "Engine"

    def ready(self) -> None:
        from engine import receivers  # noqa: F401 (connects the signal receivers)

        # The gateway's settings kept django-q2 from importing prometheus_client as its apps loaded
        # (cindy_site/settings.py); from here on the package imports as usual, should anything need it.
        if "prometheus_client" in sys.modules and sys.modules["prometheus_client"] is None:
            del sys.modules["prometheus_client"]

        # `runworkers` preloads in its pool (engine/cluster.py); django-q2's own `qcluster` here.
        if sys.argv[1:2] == ["qcluster"] and settings.CINDY_PRELOAD_TASK_MODULES:
            preload_task_modules(read_agents=False)  # no queries while apps load
