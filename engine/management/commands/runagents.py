"""`manage.py runagents [NAME ...] [--no-workers]`: the gateway, plus the task workers by default."""

from __future__ import annotations

import asyncio

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from engine.gateway import Gateway
from engine.leases import leases_live
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
            _refuse_if_all_held(names)
        gateway = Gateway(names=names)
        if not options["no_workers"]:
            gateway.workers = WorkerProcess(gateway_id=gateway.gateway_id)
        self.stdout.write(f"gateway {gateway.gateway_id} running; press Ctrl+C to stop")
        asyncio.run(gateway.run())


def _refuse_if_all_held(names: list[str]) -> None:
    """Named agents that are all driven by other gateways leave this one nothing to do: say so and stop.

    (Without names, a gateway stands by instead, to take agents over when their gateway stops.)
    """
    agents = {a.pk: a.name for a in Agent.objects.filter(name__in=names, disabled=False, stopped=False)}
    held = leases_live(agent_ids=list(agents))
    if not agents or len(held) < len(agents):
        return
    holders = "; ".join(
        f"{agents[agent_id]} by gateway {lease.holder} (lease valid until {lease.expires_at:%H:%M:%S} UTC)"
        for agent_id, lease in sorted(held.items(), key=lambda item: agents[item[0]])
    )
    raise CommandError(
        f"nothing to run: every agent named is driven by another gateway: {holders}. Stop that gateway "
        "first, or run `manage.py runagents` without names to stand by and take them over when it stops"
    )
