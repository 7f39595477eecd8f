"""`manage.py health [--forget NAME]`: the installation's state; exits non-zero when something is down."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from cindy_site.clock import now
from engine.health import installation_health, process_forget


class Command(BaseCommand):
    help = (
        "Print the state of every gateway and task worker pool, and of the database and Redis. Exits 0 "
        "when everything is up, 1 with the reasons otherwise (for systemd and monitoring)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--forget",
            metavar="NAME",
            help="remove the health row of a retired process (as `manage.py health` names it), then check",
        )

    def handle(self, *args, **options):
        if options["forget"]:
            if not process_forget(name=options["forget"]):
                raise CommandError(
                    f"--forget {options['forget']}: no process of that name; run `manage.py health`"
                )
            self.stdout.write(f"forgot {options['forget']}")
        at = now()
        health = installation_health(at=at)
        for row in health.processes:
            age = (at - row.beat_at).total_seconds()
            extra = (
                f"{row.held} agent(s)" if row.kind == row.Kind.GATEWAY else f"{row.workers} worker(s)"
            ) + (f", serves {row.serves}" if row.serves else "")
            if row.capacity:  # runagents --auto (docs/engine.md, "Placement")
                extra += f" of capacity {row.capacity}" + (", draining" if row.drain_requested_at else "")
            self.stdout.write(
                f"{row.get_kind_display()} {row.name}: pid {row.pid} on {row.host}, {extra}, "
                f"last heartbeat {age:.0f} s ago"
            )
        if not health.processes:
            self.stdout.write("no gateway or task worker pool has reported")
        if health.ok:
            self.stdout.write("healthy")
            return
        for problem in health.problems:
            self.stderr.write(f"DOWN: {problem}")
        sys.exit(1)
