"""`manage.py runagents [NAME ...] [--auto [--capacity N]] [--no-workers]`: the gateway, plus the task
workers by default. With --auto it shares the agents with the other --auto gateways (engine/placement.py).

Named agents that another gateway drives do not make it exit: a supervisor restarts a gateway at once
after a crash, and would give up after a few quick exits. The gateway stands by instead (it says so
once) and takes each agent over when its lease ends, or at once when the holder was a process on this
host that no longer exists (`engine.leases.holder_is_gone`)."""

from __future__ import annotations

import asyncio

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from cindy_site.checks import ENGINE_CHECK_TAGS
from engine.gateway import Gateway, default_gateway_id
from engine.placement import fence_database_sessions
from engine.workers import WorkerProcess

#: How many agents an --auto gateway drives when not told (`--capacity`).
DEFAULT_CAPACITY = 100


class Command(BaseCommand):
    # Every check but the URL configuration's, which would import what this process never serves.
    requires_system_checks = ENGINE_CHECK_TAGS
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
        parser.add_argument(
            "--auto",
            action="store_true",
            help="share the agents with the other --auto gateways: take unowned agents up to --capacity, "
            "hand some back when another gateway joins, hand all back on SIGTERM or `manage.py drain`",
        )
        parser.add_argument(
            "--capacity",
            type=int,
            default=DEFAULT_CAPACITY,
            metavar="N",
            help=f"with --auto: the most agents this gateway drives (default {DEFAULT_CAPACITY})",
        )

    def handle(self, *args, **options):
        names = options["names"]
        capacity = None
        if options["auto"]:
            if names:
                raise CommandError(
                    f"--auto takes no agent names (got {' '.join(names)}): an --auto gateway takes its "
                    "share of all enabled agents; run without --auto to drive named agents"
                )
            if options["capacity"] < 1:
                raise CommandError(f"--capacity {options['capacity']}: give at least 1 agent")
            capacity = options["capacity"]
        elif options["capacity"] != DEFAULT_CAPACITY:
            raise CommandError("--capacity is for --auto gateways: add --auto, or leave --capacity out")
        if names:
            known = set(Agent.objects.filter(name__in=names).values_list("name", flat=True))
            missing = [n for n in names if n not in known]
            if missing:
                raise CommandError(
                    f"unknown agent(s): {', '.join(missing)}; import them first with `manage.py importagents`"
                )
        fence_database_sessions()  # MariaDB: a cut-off gateway's locks go before its leases do
        gateway_id = default_gateway_id()
        workers = None if options["no_workers"] else WorkerProcess(gateway_id=gateway_id)
        gateway = Gateway(
            names=names, capacity=capacity, gateway_id=gateway_id, workers=workers, freeze_heap=True
        )
        self.stdout.write(f"gateway {gateway.gateway_id} running; press Ctrl+C to stop")
        asyncio.run(gateway.run())
