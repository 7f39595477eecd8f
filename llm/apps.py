from __future__ import annotations

from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "llm"
    verbose_name = "LLM"

    def ready(self) -> None:
        from django_q.signals import pre_execute

        from agents.admin_parts import LLM_NAMES, choices_provide
        from llm import (
            checks,  # noqa: F401  (registers the system checks)
            media_file,  # noqa: F401  (registers file:media.json)
            receivers,  # noqa: F401  (connects the signal receivers)
            schedule_file,  # noqa: F401  (registers file:schedule.json)
        )
        from llm.choices import llm_choices

        # The agent form suggests the models offered to personas (agents/admin_parts.py).
        choices_provide(LLM_NAMES, llm_choices)
        from cindy_site.llm_endpoints import stored_endpoints_loader
        from llm.endpoint_store import endpoints_refresh
        from llm.parameter_store import refresh_before_task

        # A process that has not reloaded yet still finds an endpoint stored in the admin.
        stored_endpoints_loader(endpoints_refresh)

        # Recall's provider embeddings are llm's calls (llm/embeddings.py); recall sits below llm.
        from llm import embeddings

        embeddings.install()

        # A django-q2 worker's task starts with the global parameters stored now (cindy_site/parameters.py).
        pre_execute.connect(refresh_before_task, dispatch_uid="llm.parameters_refresh")
