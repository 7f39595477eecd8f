"""System checks for configuration that is missing or contradicts itself."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

#: The tag of Cindy's own checks (every app's), so that a command that runs a chosen set of tags
#: (ENGINE_CHECK_TAGS) still runs them: a check with no tag runs only when all checks do.
CINDY = "cindy"

#: The checks the gateway and the task workers run as they start: every tag but `urls`. Those load
#: the URL configuration (the API, the admin and the dashboard's views), which the engine processes
#: serve none of and, with CINDY_LEAN_ENGINE, otherwise never import: 0.36 s of CPU and 24 MiB of
#: each process's memory (a gateway started in 79 MiB with them, 54 without). `manage.py check`
#: and the web process still run them.
ENGINE_CHECK_TAGS = [
    value for name, value in vars(Tags).items() if not name.startswith("_") and value != Tags.urls
] + [CINDY]


@register(CINDY)
def check_q_cluster(app_configs, **kwargs):
    errors = []
    q = settings.Q_CLUSTER
    timeout, retry = q.get("timeout"), q.get("retry")
    if timeout is not None and retry is not None and retry <= timeout:
        errors.append(
            Error(
                f"django-q2 retry ({retry}s) must be greater than timeout ({timeout}s), or a task still "
                "running is handed to a second worker",
                hint="Set CINDY_Q_RETRY above CINDY_Q_TIMEOUT.",
                id="cindy.E001",
            )
        )
    return errors


@register(CINDY)
def check_engine_settings(app_configs, **kwargs):
    messages = []
    if settings.CINDY_TICK_SECONDS <= 0:
        messages.append(
            Error(
                f"CINDY_TICK_SECONDS is {settings.CINDY_TICK_SECONDS}: it must be positive",
                hint="Use for example CINDY_TICK_SECONDS=1.",
                id="cindy.E002",
            )
        )
    if settings.CINDY_NODE_LEASE_SECONDS <= settings.CINDY_LEASE_SECONDS:
        messages.append(
            Warning(
                "CINDY_NODE_LEASE_SECONDS is not greater than CINDY_LEASE_SECONDS: a slow LLM call may "
                "lose its node lease while its gateway is still alive",
                hint="Raise CINDY_NODE_LEASE_SECONDS (default 600).",
                id="cindy.W001",
            )
        )
    if settings.MEDIA_DESC_BUDGET_PER_TICK < 0:
        messages.append(
            Error(
                f"MEDIA_DESC_BUDGET_PER_TICK is {settings.MEDIA_DESC_BUDGET_PER_TICK}: it must be 0 or more",
                id="cindy.E003",
            )
        )
    engine = settings.DATABASES["default"]["ENGINE"]
    if settings.REDIS_URL and "sqlite" in engine:
        messages.append(
            Warning(
                "REDIS_URL is set but the database is SQLite: several machines cannot share a SQLite file",
                hint="Set DATABASE_URL to a MySQL/MariaDB server when running gateways on several hosts.",
                id="cindy.W002",
            )
        )
    return messages
