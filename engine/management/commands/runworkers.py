"""`manage.py runworkers`: the django-q2 task workers, guarded against a wedged pool (engine/cluster.py)."""

from __future__ import annotations

import os

from django.conf import settings
from django.core.management.base import BaseCommand

from cindy_site.checks import ENGINE_CHECK_TAGS
from engine.cluster import GuardedSentinel
from engine.workers import GATEWAY_ENV


class Command(BaseCommand):
    # Every check but the URL configuration's, which would import what this process never serves.
    requires_system_checks = ENGINE_CHECK_TAGS
    help = (
        "Run the task workers (django-q2) for LLM planning and media descriptions. Use it instead of "
        "`qcluster`: a worker killed at any point is detected and the pool replaced within a second."
    )

    def handle(self, *args, **options):
        settings.SECRET_KEY  # noqa: B018  (task signing needs it: fail here, not in a worker)
        GuardedSentinel(gateway_id=os.environ.get(GATEWAY_ENV, "")).start()
