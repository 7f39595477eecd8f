"""`manage.py runagents [NAME ...] [--no-workers]`: the gateway, plus the task workers by default."""

from __future__ import annotations

import asyncio

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from engine.gateway import Gateway
from engine.workers import WorkerProcess


class Command(BaseCommand):
    help = (
        "Drive the agents' Telegram (or sandbox) accounts: ingest messages, run the tick and act. "
        "Also runs the django-q2 task workers unless --no-workers is given."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "names", nargs="*", metavar="NAME", help="only these agents (default: all enabled)"
        )
        parser.add_argument(
            "--no-workers",
            action="store_true",
            help="do not start the task workers (run `manage.py runworkers` separately)",
        )

    def handle(self, *args, **options):
        names = options["names"]
        if names:
            known = set(Agent.objects.filter(name__in=names).values_list("name", flat=True))
            missing = [n for n in names if n not in known]
            if missing:
                raise CommandError(
                    f"unknown agent(s): {', '.join(missing)}; import them first with `manage.py importagents`"
                )
        gateway = Gateway(names=names)
        if not options["no_workers"]:
            gateway.workers = WorkerProcess(gateway_id=gateway.gateway_id)
        self.stdout.write(f"gateway {gateway.gateway_id} running; press Ctrl+C to stop")
        asyncio.run(gateway.run())
