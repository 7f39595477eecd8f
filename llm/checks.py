"""System checks: every LLM name in the configuration must route somewhere, and one LLM call with all
its retries should fit in the worker's timeout."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register
from django.db import DatabaseError

from cindy_site.checks import CINDY
from llm.routing import UnknownModelError, fallback_names, resolve


@register(CINDY)
def check_llm_names(app_configs, **kwargs):
    """DEFAULT_AGENT_LLM, MEDIA_MODEL, TRANSCRIPTION_MODEL (when set), each CINDY_LLM_FALLBACK name
    and each agent's LLM (and conversation overrides) must be known."""
    errors = []
    for variable in ("DEFAULT_AGENT_LLM", "MEDIA_MODEL", "TRANSCRIPTION_MODEL"):
        if variable == "TRANSCRIPTION_MODEL" and not settings.TRANSCRIPTION_MODEL.strip():
            continue  # empty: follows each chat's LLM (llm/transcription.py)
        try:
            resolve(getattr(settings, variable))
        except UnknownModelError as exc:
            errors.append(Error(f"{variable}: {exc}", id="cindy.E101"))
    for name in fallback_names():
        try:
            resolve(name)
        except UnknownModelError as exc:
            errors.append(
                Error(
                    f'CINDY_LLM_FALLBACK: "{name}": {exc}',
                    hint="List LLM names separated by commas, e.g. CINDY_LLM_FALLBACK=gpt-5-mini,grok.",
                    id="cindy.E105",
                )
            )
    try:
        from agents.models import Agent
        from conversations.models import Conversation

        named = list(Agent.objects.exclude(llm="").values_list("name", "llm"))
        overrides = list(
            Conversation.objects.exclude(llm_model="").values_list("agent__name", "peer_id", "llm_model")
        )
    except DatabaseError:
        return errors  # no tables yet (before migrate): nothing to check
    for name, llm in named:
        try:
            resolve(llm)
        except UnknownModelError as exc:
            errors.append(
                Error(f'agent {name}: "LLM" {exc}', hint="Fix the agent's LLM in the admin.", id="cindy.E102")
            )
    for agent_name, peer_id, llm in overrides:
        try:
            resolve(llm)
        except UnknownModelError as exc:
            errors.append(
                Error(
                    f"agent {agent_name}, conversation {peer_id}: llm_model {exc}",
                    hint="Fix the conversation's LLM override in the admin.",
                    id="cindy.E103",
                )
            )
    return errors


@register(CINDY)
def check_llm_call_fits_worker_timeout(app_configs, **kwargs):
    """LLM_TIMEOUT_SECONDS × (LLM_MAX_RETRIES + 1) should not exceed CINDY_Q_TIMEOUT.

    django-q2 kills a task after CINDY_Q_TIMEOUT. A turn stops at its own deadline before that
    (`llm.planning.turn_budget_seconds`), but then the retries configured past the deadline never happen.
    """
    attempts = settings.LLM_MAX_RETRIES + 1
    worst = settings.LLM_TIMEOUT_SECONDS * attempts
    worker_timeout = settings.Q_CLUSTER.get("timeout")
    if not worker_timeout or worst <= worker_timeout:
        return []
    return [
        Warning(
            f"LLM_TIMEOUT_SECONDS ({settings.LLM_TIMEOUT_SECONDS:g}) × {attempts} attempts "
            f"(LLM_MAX_RETRIES {settings.LLM_MAX_RETRIES} + 1) = {worst:g} s is more than CINDY_Q_TIMEOUT "
            f"({worker_timeout} s): a slow provider makes turns stop at their deadline before the last "
            "retries are tried.",
            hint="Lower LLM_TIMEOUT_SECONDS or LLM_MAX_RETRIES, or raise CINDY_Q_TIMEOUT "
            "(and CINDY_Q_RETRY above it).",
            id="cindy.W104",
        )
    ]


@register(CINDY)
def check_image_model(app_configs, **kwargs):
    """CINDY_IMAGE_MODEL (the `image` task's pictures, llm/images.py) must be a Gemini model."""
    hint = "Set CINDY_IMAGE_MODEL to a Gemini image model, e.g. gemini-2.5-flash-image."
    try:
        route = resolve(settings.CINDY_IMAGE_MODEL)
    except UnknownModelError as exc:
        return [Error(f"CINDY_IMAGE_MODEL: {exc}", hint=hint, id="cindy.E111")]
    if route.provider != "gemini":
        return [
            Error(
                f'CINDY_IMAGE_MODEL is "{settings.CINDY_IMAGE_MODEL}": pictures are made by Gemini image '
                "models only",
                hint=hint,
                id="cindy.E111",
            )
        ]
    return []
