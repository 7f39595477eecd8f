"""`manage.py drain GATEWAY [--undo] [--wait SECONDS]`: an --auto gateway hands back its agents."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from conversations.services.wake import wake_gateway
from engine.placement import DrainError, gateway_drain_request, gateway_holdings


class Command(BaseCommand):
    help = (
        "Ask a `runagents --auto` gateway to hand back all its agents (the other --auto gateways take "
        "them within seconds) and take none until `drain --undo`. The gateway keeps running."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "gateway", metavar="GATEWAY", help="the gateway id (`manage.py health` lists them)"
        )
        parser.add_argument("--undo", action="store_true", help="let the gateway take agents again")
        parser.add_argument(
            "--wait",
            type=float,
            default=0,
            metavar="SECONDS",
            help="wait up to SECONDS until the gateway holds no agent (fails if it still does)",
        )

    def handle(self, *args, **options):
        gateway_id = options["gateway"]
        try:
            gateway_drain_request(gateway_id=gateway_id, undo=options["undo"])
        except DrainError as exc:
            raise CommandError(str(exc)) from exc
        wake_gateway(gateway_id)
        if options["undo"]:
            self.stdout.write(f"gateway {gateway_id} takes agents again")
            return
        deadline = time.monotonic() + options["wait"]
        held = gateway_holdings(gateway_id=gateway_id)
        while held and time.monotonic() < deadline:
            time.sleep(0.2)
            held = gateway_holdings(gateway_id=gateway_id)
        if options["wait"] and held:
            raise CommandError(
                f"gateway {gateway_id} still holds {held} agent(s) after {options['wait']:g} s; is it "
                "running and reaching the database? (`manage.py health`)"
            )
        self.stdout.write(
            f"gateway {gateway_id} is draining"
            + (f"; it holds {held} agent(s) still" if held else ": it holds no agent")
        )
